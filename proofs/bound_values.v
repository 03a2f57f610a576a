(** * The bound expressions of bounds.v in exact rational arithmetic

    verify/bounds/ evaluates each bound in double with outward rounding. To tie those
    numbers to the theorems, this file restates each theorem's right-hand side over Q
    (computable) and proves the two equal; scripts/prove evaluates these functions on the
    inputs of tests/golden/bounds_coq.txt and fails if the values committed there are not
    what Coq computes, and the C++ test B1_CoqValues.* (tests/test_bounds_coq.cpp) checks
    that every bound function returns at least that exact value and at most 2^-40 above it.

    Covered: B1 (dot products, matmul rows, B7's weighted sum), B3 (RoPE), B4 for head
    dimensions that are perfect squares (sqrt d rational), B6's normalisation. B2, B5 and
    B8 involve square roots and exponentials of their inputs and have no rational twin
    here (docs/proofs.md). *)

From Coq Require Import Reals QArith Qreals Psatz Lra.
From Flocq Require Import Core.
From Akv Require Import arithmetic bounds.

Open Scope R_scope.

Definition uQ : Q := 1 # 16777216.
Definition etaQ : Q := 1 # (2 ^ 150).

Lemma uQ_u : Q2R uQ = u.
Proof. unfold uQ, Q2R. simpl. rewrite u_val. lra. Qed.

Lemma etaQ_eta : Q2R etaQ = eta.
Proof. unfold etaQ, Q2R, eta. simpl. rewrite Rmult_1_l. reflexivity. Qed.

Lemma Q2R_nat : forall n : nat, Q2R (inject_Z (Z.of_nat n)) = INR n.
Proof. intro n. unfold Q2R, inject_Z. simpl. rewrite INR_IZR_INZ. lra. Qed.

Lemma Q2R_1 : Q2R 1 = 1.
Proof. unfold Q2R. simpl. lra. Qed.

Lemma Q2R_2 : Q2R 2 = 2.
Proof. unfold Q2R. simpl. lra. Qed.

(** Sizes are integers (Z) so that Coq computes with them in binary. *)
Definition gammaQ (n : Z) : Q := inject_Z n * uQ / (1 - inject_Z n * uQ).

Lemma gammaQ_gamma : forall n : nat, INR n * u < 1 -> Q2R (gammaQ (Z.of_nat n)) = gamma n.
Proof.
  intros n H. unfold gammaQ, gamma.
  assert (Hne : ~ (1 - inject_Z (Z.of_nat n) * uQ == 0)%Q).
  { intro E. apply Qeq_eqR in E. rewrite Q2R_minus, Q2R_mult, Q2R_nat, uQ_u, Q2R_1 in E.
    unfold Q2R in E. simpl in E. lra. }
  rewrite Q2R_div by exact Hne. rewrite Q2R_minus, !Q2R_mult, Q2R_nat, uQ_u, Q2R_1.
  reflexivity.
Qed.

(** [B1]: gamma_n S + (1 + gamma_n) n eta, S = sum |x_i y_i| (also B3 with n = 2, B7, a matmul row). *)
Definition dot_boundQ (n : Z) (S : Q) : Q :=
  gammaQ n * S + (1 + gammaQ n) * inject_Z n * etaQ.

Lemma dot_boundQ_B1 : forall (n : nat) S, INR n * u < 1 ->
  Q2R (dot_boundQ (Z.of_nat n) S) = gamma n * Q2R S + (1 + gamma n) * INR n * eta.
Proof.
  intros n S H. unfold dot_boundQ.
  rewrite Q2R_plus, !Q2R_mult, Q2R_plus, gammaQ_gamma by exact H. rewrite Q2R_nat, etaQ_eta, Q2R_1.
  reflexivity.
Qed.

(** [B4] for d = s^2: gamma_{d+3} A / s + (1 + gamma_{d+3}) (2 d + 1 + (1 + u) K) eta,
    A = sum |q_i k_i|, K = sum |k_i|. *)
Definition score_boundQ (s : positive) (A K : Q) : Q :=
  let d := (Z.pos s * Z.pos s)%Z in
  gammaQ (d + 3) * A / inject_Z (Z.pos s) +
  (1 + gammaQ (d + 3)) * (2 * inject_Z d + 1 + (1 + uQ) * K) * etaQ.

Lemma score_boundQ_B4 : forall (qk : list (R * R)) s A K,
  length qk = Pos.to_nat (s * s) -> INR (length qk + 3) * u < 1 ->
  Q2R A = sum_abs qk -> Q2R K = sum_abs_snd qk ->
  Q2R (score_boundQ s A K) = score_bound qk.
Proof.
  intros qk s A K Hlen Hu HA HK. unfold score_boundQ, score_bound.
  assert (Hd : (Z.pos s * Z.pos s + 3)%Z = Z.of_nat (length qk + 3)).
  { rewrite Nat2Z.inj_add, Hlen, positive_nat_Z. reflexivity. }
  rewrite Hd.
  assert (Hs : sqrt (INR (length qk)) = IZR (Z.pos s)).
  { rewrite Hlen, INR_IZR_INZ, positive_nat_Z, Pos2Z.inj_mul, mult_IZR.
    apply sqrt_square. apply IZR_le. lia. }
  rewrite Hs.
  assert (Hne : ~ (inject_Z (Z.pos s) == 0)%Q) by (unfold Qeq; simpl; lia).
  rewrite Q2R_plus, Q2R_div by exact Hne. rewrite !Q2R_mult, !Q2R_plus, !Q2R_mult, Q2R_plus.
  rewrite gammaQ_gamma by exact Hu. rewrite HA, HK, uQ_u, etaQ_eta.
  assert (Q2R (inject_Z (Z.pos s * Z.pos s)) = INR (length qk)).
  { rewrite Hlen, INR_IZR_INZ, positive_nat_Z. unfold Q2R, inject_Z. simpl. lra. }
  assert (Q2R (inject_Z (Z.pos s)) = IZR (Z.pos s)) by (unfold Q2R, inject_Z; simpl; lra).
  rewrite H, H0, Q2R_1, Q2R_2. unfold Rdiv. ring.
Qed.

(** [B6]: p_j ((1 + u)^2 / (1 - gamma_{n-1}) - 1) + eta + (1 + u) e_j eta, p_j = e_j / S
    (the last term for the reciprocal form). *)
Definition normalise_boundQ (n : Z) (ej S : Q) : Q :=
  ej / S * ((1 + uQ) * (1 + uQ) / (1 - gammaQ (n - 1)) - 1) + etaQ + (1 + uQ) * ej * etaQ.

Lemma normalise_boundQ_B6 : forall (n : nat) ej S, (1 <= n)%nat -> INR (n - 1) * u < 1 -> gamma (n - 1) < 1 -> ~ (S == 0)%Q ->
  Q2R (normalise_boundQ (Z.of_nat n) ej S) = Q2R ej / Q2R S * norm_rel n + eta + (1 + u) * Q2R ej * eta.
Proof.
  intros n ej S Hn Hu Hg HS. unfold normalise_boundQ, norm_rel.
  replace (Z.of_nat n - 1)%Z with (Z.of_nat (n - 1)) by lia.
  assert (Hne : ~ (1 - gammaQ (Z.of_nat (n - 1)) == 0)%Q).
  { intro E. apply Qeq_eqR in E. rewrite Q2R_minus, gammaQ_gamma, Q2R_1 in E by exact Hu. unfold Q2R in E. simpl in E. lra. }
  rewrite !Q2R_plus, !Q2R_mult, Q2R_minus, Q2R_div, Q2R_div by assumption.
  rewrite Q2R_minus, !Q2R_mult, !Q2R_plus, gammaQ_gamma, uQ_u, etaQ_eta, Q2R_1 by exact Hu.
  reflexivity.
Qed.
