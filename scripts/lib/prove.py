#!/usr/bin/env python3
"""The checks of scripts/prove (docs/proofs.md), after its packages are installed.

  prove.py check WORK            compile proofs/ in WORK, check axioms, spec names, golden values
  prove.py update-values WORK    rewrite tests/golden/bounds_coq.txt (inputs and Coq's values)

Exit 0 only when every check ran and passed; a check that found nothing to check fails.
"""
import random
import resource
import re
import shutil
import struct
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROOFS = ROOT / "proofs"
GOLDEN = ROOT / "tests" / "golden" / "bounds_coq.txt"

# Coq's standard classical axioms (the real numbers of the standard library rest on them;
# Flocq adds none): the only axioms a clause theorem may depend on. The named hypotheses
# (I1 of a backend, B0 of akv::exp) are premises of the theorems that use them, not axioms.
ALLOWED_AXIOMS = {
    "ClassicalDedekindReals.sig_not_dec",
    "ClassicalDedekindReals.sig_forall_dec",
    "FunctionalExtensionality.functional_extensionality_dep",
    "Classical_Prop.classic",
}

# Vernacular that admits something without proof or turns a check off.
FORBIDDEN = [
    r"\bAdmitted\b", r"\badmit\b", r"\bAxioms?\b", r"\bParameters?\b", r"\bConjecture\b",
    r"\bUnset\s+(Guard|Positivity|Universe)\s+Checking\b", r"\bDeclare\s+ML\s+Module\b",
    r"#\[\s*bypass_check", r"\bAbort\s+All\b",
]

CLAUSE_THEOREM = re.compile(r"^\s*(?:Theorem|Lemma)\s+([A-Z]{1,3}[0-9]+_[A-Za-z0-9_']*)", re.M)
CLAUSE_HEAD = re.compile(r"^#{1,6} \[([A-Z]{1,3}[0-9]+)\]")


def fail(msg):
    print(f"akv prove: FAIL: {msg}", file=sys.stderr)
    return 1


def files():
    """The .v files in dependency order, from proofs/_CoqProject."""
    out = []
    for line in (PROOFS / "_CoqProject").read_text().splitlines():
        line = line.strip()
        if line.endswith(".v"):
            out.append(line)
    return out


def spec_clauses(md):
    """(clause id, first line number, text) of each clause of a spec file."""
    out, clause, start, lines = [], None, 0, []
    for ln, line in enumerate(md.read_text().splitlines(), 1):
        h = CLAUSE_HEAD.match(line)
        if h:
            if clause:
                out.append((clause, start, "\n".join(lines)))
            clause, start, lines = h.group(1), ln, []
        elif re.match(r"^#{1,6} ", line) and clause:
            out.append((clause, start, "\n".join(lines)))
            clause, lines = None, []
        elif clause:
            lines.append(line)
    if clause:
        out.append((clause, start, "\n".join(lines)))
    return out


def strip_comments(text):
    """Coq comments (* ... *) nest; strings are not needed here."""
    out, depth, i = [], 0, 0
    while i < len(text):
        if text.startswith("(*", i):
            depth, i = depth + 1, i + 2
        elif text.startswith("*)", i) and depth:
            depth, i = depth - 1, i + 2
        else:
            if not depth:
                out.append(text[i])
            i += 1
    return "".join(out)


def coqc(work, name, extra_args=()):
    """Runs coqc; returns the result and the CPU seconds it used (wall time on a shared machine
    measures the neighbours)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(["coqc", "-Q", ".", "Akv", *extra_args, name], cwd=work, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


# ---------------------------------------------------------------------------------------------
# The golden values: inputs, and the bound's exact value as Coq computes it (bound_values.v).

def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def hexf(x):
    return float(x).hex()


def qlit(fr):
    fr = Fraction(fr)
    if fr.denominator == 1:
        return f"({fr.numerator} # 1)"
    return f"({fr.numerator} # {fr.denominator})"


def exact(s):
    return Fraction(float.fromhex(s))


SQRT_BITS = 80  # the square roots of B2's enclosure, to 2^-80 of one


def coq_parts(kind, args, tag):
    """(definitions, boolean side conditions, value expressions) of one golden line. The
    definitions compute what a line's values share once (B2's square roots); every side
    condition must compute to true."""
    if kind == "B2":  # rmsnorm_bounds(x, w, eps): per element, (upper, lower) of the exact bound
        n, eps = int(args[0]), exact(args[1])
        x, w = [exact(a) for a in args[2:2 + n]], [exact(a) for a in args[2 + n:2 + 2 * n]]
        m = qlit(sum(v * v for v in x) / n + eps)
        roots = f"akv_roots_{tag}"
        defs = [f"Definition {roots} := Eval vm_compute in (rms_roots {n}%Z {m} {SQRT_BITS}%positive)."]
        exprs = []
        for xj, wj in zip(x, w):
            enc = f"rms_enclosure_from {roots} {m} {qlit(abs(xj * wj))} {qlit(max(abs(xj), abs(wj)))}"
            exprs += [f"fst ({enc})", f"snd ({enc})"]
        return defs, [f"rms_roots_ok {n}%Z {m} {roots}"], exprs
    return [], [], coq_expr(kind, args)


def coq_expr(kind, args):
    """The Coq expression of one golden line's bound(s), and how many values it gives."""
    if kind == "B1":  # dot_bound_from_abs(S, n)
        n, S = int(args[0]), exact(args[1])
        return [f"dot_boundQ {n}%Z {qlit(S)}"]
    if kind == "B1v":  # dot_bound(x, y, n): S = sum |x_i y_i| exactly
        n = int(args[0])
        xs, ys = [exact(a) for a in args[1:1 + n]], [exact(a) for a in args[1 + n:1 + 2 * n]]
        S = sum(abs(a * b) for a, b in zip(xs, ys))
        return [f"dot_boundQ {n}%Z {qlit(S)}"]
    if kind == "B3":  # rope_bounds of one pair x0, x1 with c, s: two outputs
        x0, x1, c, s = (exact(a) for a in args[:4])
        return [f"dot_boundQ 2%Z {qlit(abs(x0 * c) + abs(x1 * s))}", f"dot_boundQ 2%Z {qlit(abs(x0 * s) + abs(x1 * c))}"]
    if kind == "B4":  # score_bound(q, k), d = r^2
        r = int(args[0])
        d = r * r
        q, k = [exact(a) for a in args[1:1 + d]], [exact(a) for a in args[1 + d:1 + 2 * d]]
        A, K = sum(abs(a * b) for a, b in zip(q, k)), sum(abs(b) for b in k)
        return [f"score_boundQ {r}%positive {qlit(A)} {qlit(K)}"]
    if kind == "B6":  # normalise_bounds(e): one value per element
        n = int(args[0])
        e = [exact(a) for a in args[1:1 + n]]
        S = sum(e)
        return [f"normalise_boundQ {n}%Z {qlit(x)} {qlit(S)}" for x in e]
    raise ValueError(f"unknown golden kind {kind}")


def run_golden_file(work, lines):
    src = ["From Coq Require Import QArith.", "From Akv Require Import bound_values.", "Open Scope Q_scope."] + lines
    (work / "golden_values.v").write_text("\n".join(src) + "\n")
    r, dt = coqc(work, "golden_values.v")
    print(f"akv prove: golden values: {dt:.1f} s CPU")
    if r.returncode != 0:
        raise RuntimeError("coqc on the golden values failed:\n" + r.stdout + r.stderr)
    return r.stdout


def check_guards(out, guards):
    bools = re.findall(r"=\s*(true|false)\s*:\s*bool\b", out)
    return bools[:len(guards)], bools[len(guards):]


def coq_values(work, exprs, guards=(), defs=()):
    """Evaluates the Q expressions with Coq (vm_compute, Qred) and returns Fractions; every guard
    (a bool expression) must evaluate to true. Slow for large numbers (Coq prints in decimal):
    for --update-values only."""
    lines = list(defs) + [f"Eval vm_compute in ({g})." for g in guards]
    lines += [f"Eval vm_compute in (let q := Qred ({e}) in (Qnum q, Zpos (Qden q)))." for e in exprs]
    out = run_golden_file(work, lines)
    g, _ = check_guards(out, guards)
    if len(g) != len(guards) or any(b != "true" for b in g):
        raise RuntimeError(f"a side condition of the golden values does not hold: {list(zip(guards, g))[:3]}")
    vals = []
    for num, den in re.findall(r"=\s*\(\s*(-?[0-9\s]+?)%Z\s*,\s*([0-9\s]+?)%Z\s*\)\s*:\s*Z\s*\*\s*Z", out):
        vals.append(Fraction(int(re.sub(r"\s", "", num)), int(re.sub(r"\s", "", den))))
    if len(vals) != len(exprs):
        raise RuntimeError(f"expected {len(exprs)} values from Coq, parsed {len(vals)}")
    return vals


def coq_equal(work, exprs, want, guards=(), defs=()):
    """For each expression, whether Coq computes exactly the committed value (Qeq_bool: no
    decimal printing, so a few seconds for every value); every guard must hold."""
    lines = list(defs) + [f"Eval vm_compute in ({g})." for g in guards]
    lines += [f"Eval vm_compute in (Qeq_bool ({e}) {qlit(w)})." for e, w in zip(exprs, want)]
    out = run_golden_file(work, lines)
    g, eq = check_guards(out, guards)
    if len(g) != len(guards) or any(b != "true" for b in g):
        raise RuntimeError(f"a side condition of the golden values does not hold: {list(zip(guards, g))[:3]}")
    if len(eq) != len(exprs):
        raise RuntimeError(f"expected {len(exprs)} comparisons from Coq, parsed {len(eq)}")
    return [b == "true" for b in eq]


def read_golden():
    lines = []
    for raw in GOLDEN.read_text().splitlines():
        if not raw.strip() or raw.startswith("#"):
            continue
        lhs, rhs = raw.split("=")
        toks = lhs.split()
        lines.append((toks[0], toks[1:], [Fraction(v) for v in rhs.split()]))
    return lines


def gen_inputs(seed=48):
    """Edge and seeded random inputs for every kind (about 110 values: Coq computes each in
    about 0.05 s; magnitudes stay within 2^-160 .. 2^130, where that holds)."""
    rng = random.Random(seed)

    def rand_f32(lo=-20, hi=20, subnormal=0.1):
        if rng.random() < subnormal:
            return f32(rng.randint(-(1 << 23) + 1, (1 << 23) - 1) * 2.0 ** -149)
        m = rng.uniform(1, 2) * rng.choice((-1, 1))
        return f32(m * 2.0 ** rng.randint(lo, hi))

    out = []
    # B1 edges: lengths from 1 to the largest the bound is finite for (n u < 1/2), sums of
    # |products| from 0 (only the underflow term) through the subnormal range to large.
    ns = [1, 2, 3, 64, 576, 16384, (1 << 22), (1 << 23) - 1]
    for n in ns:
        for S in [0.0, 2.0 ** -149, 2.0 ** -126, 1.0, 3.0, 2.0 ** 100]:
            out.append(("B1", [str(n), hexf(S)]))
    for _ in range(16):
        S = rng.uniform(1, 2) * 2.0 ** rng.randint(-160, 130)
        out.append(("B1", [str(rng.choice([rng.randint(1, 100), rng.randint(100, 100000)])), hexf(S)]))
    for n, sub in [(1, 0.0), (2, 1.0), (5, 0.3), (17, 0.0), (64, 0.3)]:
        xs = [rand_f32(-20, 20, sub) for _ in range(n)]
        ys = [rand_f32(-20, 20, sub) for _ in range(n)]
        out.append(("B1v", [str(n)] + [hexf(v) for v in xs + ys]))
    out.append(("B1v", ["3"] + [hexf(0.0)] * 6))
    for _ in range(6):
        vals = [rand_f32(-30, 10, 0.2) for _ in range(2)] + [f32(rng.uniform(-1, 1)) for _ in range(2)]
        out.append(("B3", [hexf(v) for v in vals]))
    out.append(("B3", [hexf(0.0)] * 4))
    for r, sub in [(1, 0.0), (2, 0.5), (4, 0.0), (8, 0.5)]:
        d = r * r
        q = [rand_f32(-10, 10, sub) for _ in range(d)]
        k = [rand_f32(-10, 10, sub) for _ in range(d)]
        out.append(("B4", [str(r)] + [hexf(v) for v in q + k]))
    out.append(("B4", ["2"] + [hexf(0.0)] * 8))
    for n, eps, sub in [(1, 1e-5, 0.0), (1, 0.0, 0.0), (3, 1e-6, 0.3), (6, 1e-5, 0.1)]:
        x = [rand_f32(-8, 8, sub) for _ in range(n)]
        w = [rand_f32(-4, 4, 0.0) for _ in range(n)]
        out.append(("B2", [str(n), hexf(f32(eps))] + [hexf(v) for v in x + w]))
    # a tiny row with eps = 0: m near 2^-141, where the 2^-148 / m term is most of eps_m
    out.append(("B2", ["2", hexf(0.0), hexf(f32(1.5 * 2.0 ** -70)), hexf(f32(2.0 ** -72)), hexf(1.0), hexf(-2.0)]))
    for n in [1, 3, 8]:
        e = [f32(rng.uniform(0, 1)) for _ in range(n)]
        e[rng.randrange(n)] = 1.0
        out.append(("B6", [str(n)] + [hexf(v) for v in e]))
    # A sum past 2^126: the reciprocal form's subnormal fl(1 / S) (the term (1 + u) e_j eta).
    out.append(("B6", ["2", hexf(f32(2.0 ** 127)), hexf(f32(1.5 * 2.0 ** 126))]))
    out.append(("B6", ["3", hexf(1.0), hexf(0.0), hexf(2.0 ** -149)]))
    return out


def update_values(work):
    inputs = gen_inputs()
    exprs, counts, guards, defs = [], [], [], []
    for i, (kind, args) in enumerate(inputs):
        d, g, e = coq_parts(kind, args, i)
        exprs += e
        counts.append(len(e))
        guards += g
        defs += d
    vals = coq_values(work, exprs, guards, defs)
    lines = [
        "# Exact values of the bound expressions of proofs/bounds.v, as Coq computes them",
        "# (proofs/bound_values.v: each Q function is proven equal to its theorem's right-hand side).",
        "# kind args... = value(s) as p/q. Regenerate: scripts/prove --update-values; scripts/prove fails",
        "# when a value here is not what Coq computes. Read by tests/test_bounds_coq.cpp.",
        "# B1 n S: dot_bound_from_abs | B1v n x.. y..: dot_bound | B3 x0 x1 c s: rope_bounds (2 outputs)",
        "# B4 r q.. k.. (d = r^2): score_bound | B6 n e..: normalise_bounds (n outputs)",
        "# B2 n eps x.. w..: rmsnorm_bounds, per output (upper, lower) of the exact bound (square roots",
        "# enclosed to 2^-80: proofs/bound_values.v rms_enclosureQ_B2)",
    ]
    i = 0
    for (kind, args), c in zip(inputs, counts):
        vs = vals[i:i + c]
        i += c
        lines.append(" ".join([kind] + args) + " = " + " ".join(f"{v.numerator}/{v.denominator}" for v in vs))
    GOLDEN.write_text("\n".join(lines) + "\n")
    print(f"akv prove: wrote {len(inputs)} golden lines ({len(exprs)} values) to {GOLDEN.relative_to(ROOT)}")
    return 0


def check_golden(work):
    golden = read_golden()
    if not golden:
        return fail(f"{GOLDEN.relative_to(ROOT)} holds no values: nothing ties the code to the theorems")
    exprs, want, guards, defs = [], [], [], []
    for i, (kind, args, vals) in enumerate(golden):
        d, g, e = coq_parts(kind, args, i)
        guards += g
        defs += d
        if len(e) != len(vals):
            return fail(f"golden line {kind} {' '.join(args[:3])}...: {len(vals)} values for {len(e)} bounds")
        exprs += e
        want += vals
    try:
        same = coq_equal(work, exprs, want, guards, defs)
    except RuntimeError as e:
        return fail(str(e))
    bad = [(e, w) for e, w, ok in zip(exprs, want, same) if not ok]
    if bad:
        e, w = bad[0]
        return fail(f"{len(bad)} golden values differ from Coq's; first: {e}: file {w}"
                    f" (scripts/prove --update-values rewrites the file)")
    print(f"akv prove: {len(same)} golden bound values of {len(golden)} inputs equal Coq's (bound_values.v)")
    return 0


# ---------------------------------------------------------------------------------------------

def check(work):
    t0 = time.monotonic()
    order = files()
    on_disk = sorted(p.name for p in PROOFS.glob("*.v"))
    if sorted(order) != on_disk:
        return fail(f"proofs/_CoqProject lists {sorted(order)}, proofs/ holds {on_disk}")
    # 1. Nothing admitted, no axiom declared.
    for name in order:
        text = strip_comments((PROOFS / name).read_text())
        for pat in FORBIDDEN:
            m = re.search(pat, text)
            if m:
                line = text[:m.start()].count("\n") + 1
                return fail(f"proofs/{name}:{line}: '{m.group(0)}' is not allowed (nothing may be admitted or assumed)")
    # 2. Every file compiles.
    for name in order:
        r, dt = coqc(work, name)
        if r.returncode != 0:
            return fail(f"coqc proofs/{name}:\n{r.stdout}{r.stderr}")
        print(f"akv prove: coqc {name}: {dt:.1f} s CPU")
    # 3. The clause theorems, and the names the spec gives.
    theorems = {}
    for name in order:
        for m in CLAUSE_THEOREM.finditer(strip_comments((PROOFS / name).read_text())):
            theorems[m.group(1)] = name
    if not theorems:
        return fail("no clause theorem (a Theorem or Lemma named <ID>_...) in proofs/")
    cited = {}
    for md in sorted((ROOT / "spec").glob("*.md")):
        for clause, start, body in spec_clauses(md):
            for m in re.finditer(r"checked: Coq", body):
                para = body[m.end():].split("\n\n")[0]
                for nm in re.findall(r"`([A-Z]{1,3}[0-9]+_[A-Za-z0-9_']*)`", para):
                    ln = start + body[:m.start()].count("\n")
                    where = f"spec/{md.name}:{ln}"
                    if nm not in theorems:
                        return fail(f"{where}: clause [{clause}] names Coq `{nm}`, which no file of proofs/ proves")
                    if not nm.startswith(clause + "_"):
                        return fail(f"{where}: Coq `{nm}` is cited under clause [{clause}]: its name must start with {clause}_")
                    cited[nm] = where
            for nm in re.findall(r"Coq `([A-Za-z0-9_']+)`", body):
                if nm not in theorems:
                    return fail(f"spec/{md.name}: clause [{clause}] names Coq `{nm}`, which no file of proofs/ proves")
    if not cited:
        return fail("no spec clause says 'checked: Coq `Name`'")
    # 4. Print Assumptions on every clause theorem.
    mods = " ".join(Path(n).stem for n in order)

    def assumptions(names):
        """Print Assumptions, per theorem when one_by_one, else once over all of them (it
        walks Flocq's library for each call: once is several times faster)."""
        src = [f"From Akv Require Import {mods}."]
        if len(names) == 1:
            src.append(f'Goal True. idtac "@@THEOREM {names[0]}". exact I. Qed.')
            src.append(f"Print Assumptions {names[0]}.")
        else:
            src.append("Definition akv_every_clause_theorem := (" + ", ".join(f"@{nm}" for nm in names) + ").")
            src.append('Goal True. idtac "@@THEOREM *". exact I. Qed.')
            src.append("Print Assumptions akv_every_clause_theorem.")
        (work / "assumptions.v").write_text("\n".join(src) + "\n")
        r, dt = coqc(work, "assumptions.v")
        if r.returncode != 0:
            raise RuntimeError(f"Print Assumptions failed:\n{r.stdout}{r.stderr}")
        axioms, in_axioms, seen = set(), False, False
        for line in r.stdout.splitlines():
            if line.startswith("@@THEOREM"):
                seen = True
                continue
            if not seen:
                continue
            if line.startswith("Axioms:"):
                in_axioms = True
            elif line.startswith("Closed under the global context"):
                in_axioms = False
            elif in_axioms and line and not line[0].isspace():
                axioms.add(line.split(" : ")[0].strip())
        if not seen:
            raise RuntimeError("Print Assumptions printed nothing")
        return axioms, dt

    try:
        used, dt = assumptions(sorted(theorems))
    except RuntimeError as e:
        return fail(str(e))
    print(f"akv prove: Print Assumptions over all {len(theorems)} clause theorems: {dt:.1f} s CPU")
    per = {}
    if used - ALLOWED_AXIOMS:  # name the theorems that use them
        for nm in sorted(theorems):
            per[nm] = assumptions([nm])[0]
    else:
        per = {nm: set() for nm in theorems}
    if set(per) != set(theorems):
        return fail(f"Print Assumptions reported on {len(per)} of {len(theorems)} clause theorems")
    bad = {nm: ax - ALLOWED_AXIOMS for nm, ax in per.items() if ax - ALLOWED_AXIOMS}
    if bad:
        nm, ax = sorted(bad.items())[0]
        return fail(f"{nm} ({theorems[nm]}) rests on axioms outside Coq's standard classical ones: {sorted(ax)}")
    print(f"akv prove: {len(theorems)} clause theorems in {len(order)} files; axioms used: "
          f"{', '.join(sorted(used)) or 'none'} (all of Coq's standard library); no Admitted, no Axiom")
    print(f"akv prove: {len(cited)} theorems named by spec clauses, each proven: {', '.join(sorted(cited))}")
    # 5. The golden values the C++ test compares the bound functions with.
    rc = check_golden(work)
    if rc:
        return rc
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"akv prove: PASS ({time.monotonic() - t0:.1f} s wall, {cpu.ru_utime + cpu.ru_stime:.1f} s CPU in coqc)")
    return 0


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("check", "update-values"):
        print(__doc__, file=sys.stderr)
        return 2
    work = Path(sys.argv[2])
    marker = work / ".akv-proofs"
    if work.exists():
        if any(work.iterdir()) and not marker.exists():
            return fail(f"{work} exists and is not a folder scripts/prove made: not removing it (set AKV_PROOF_DIR)")
        shutil.rmtree(work)
    work.mkdir(parents=True)
    marker.write_text("scripts/prove's work folder: removed and rebuilt on every run\n")
    for p in PROOFS.glob("*.v"):
        shutil.copy(p, work / p.name)
    shutil.copy(PROOFS / "_CoqProject", work / "_CoqProject")
    if sys.argv[1] == "update-values":
        for name in files():
            r, _ = coqc(work, name)
            if r.returncode != 0:
                return fail(f"coqc proofs/{name}:\n{r.stdout}{r.stderr}")
        return update_values(work)
    return check(work)


if __name__ == "__main__":
    sys.exit(main())
