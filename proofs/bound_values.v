(** * The bound expressions of bounds.v in exact rational arithmetic

    verify/bounds/ evaluates each bound in double with outward rounding. To tie those
    numbers to the theorems, this file restates each theorem's right-hand side over Q
    (computable) and proves the two equal; scripts/prove evaluates these functions on the
    inputs of tests/golden/bounds_coq.txt and fails if the values committed there are not
    what Coq computes, and the C++ test B1_CoqValues.* (tests/test_bounds_coq.cpp) checks
    that every bound function returns at least that exact value and at most 2^-40 above it.

    Covered: B1 (dot products, matmul rows, B7's weighted sum), B3 (RoPE), B4 for head
    dimensions that are perfect squares (sqrt d rational), B6's normalisation, and B2, whose
    two square roots are enclosed by rationals to 2^-80 ([sqrt_enclosure]), which encloses
    the bound ([rms_enclosureQ_B2]). B5 and B8 involve exponentials of their inputs and have
    no rational twin here (docs/proofs.md). *)

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

(** ** Square roots, enclosed: the B2 expression is not rational, but it is monotone in the two
    square roots it takes, so rational enclosures of those give an enclosure of it. *)

(** floor(sqrt q * 2^k) / 2^k and one more unit: sqrt q lies between them. *)
Definition sqrt_lo (q : Q) (k : positive) : Q :=
  let e := (2 ^ k)%positive in Z.sqrt (Qnum q * Zpos (Qden q) * Zpos e * Zpos e) # (Qden q * e).
Definition sqrt_hi (q : Q) (k : positive) : Q :=
  let e := (2 ^ k)%positive in (Z.sqrt (Qnum q * Zpos (Qden q) * Zpos e * Zpos e) + 1) # (Qden q * e).

Lemma sqrt_enclosure : forall q k, 0 <= Q2R q ->
  Q2R (sqrt_lo q k) <= sqrt (Q2R q) <= Q2R (sqrt_hi q k).
Proof.
  intros [p d] k Hq. unfold sqrt_lo, sqrt_hi, Q2R in *. simpl in *.
  set (e := (2 ^ k)%positive).
  set (N := (p * Z.pos d * Z.pos e * Z.pos e)%Z).
  assert (Hd : 0 < IZR (Z.pos d)) by (apply IZR_lt; lia).
  assert (He : 0 < IZR (Z.pos e)) by (apply IZR_lt; lia).
  assert (Hp : (0 <= p)%Z).
  { apply le_IZR. apply (Rmult_le_reg_r (/ IZR (Z.pos d))); [apply Rinv_0_lt_compat; lra|]. lra. }
  assert (HN : (0 <= N)%Z) by (unfold N; repeat apply Z.mul_nonneg_nonneg; lia).
  destruct (Z.sqrt_spec N HN) as (Hlo & Hhi).
  set (s := Z.sqrt N) in *.
  assert (Hs : (0 <= s)%Z) by apply Z.sqrt_nonneg.
  assert (HNr : IZR N = IZR p * IZR (Z.pos d) * IZR (Z.pos e) * IZR (Z.pos e)) by (unfold N; rewrite !mult_IZR; ring).
  assert (Hden : IZR (Z.pos (d * e)) = IZR (Z.pos d) * IZR (Z.pos e)) by (rewrite Pos2Z.inj_mul, mult_IZR; ring).
  rewrite !Hden.
  set (D := IZR (Z.pos d) * IZR (Z.pos e)) in *.
  assert (HD : 0 < D) by (unfold D; nra).
  (* q = N / D^2 *)
  assert (Hq' : IZR p * / IZR (Z.pos d) = IZR N / (D * D)) by (rewrite HNr; unfold D; field; lra).
  rewrite Hq'.
  assert (Hs2 : IZR s * IZR s <= IZR N) by (rewrite <- mult_IZR; apply IZR_le; lia).
  assert (Hs3 : IZR N < (IZR s + 1) * (IZR s + 1)) by (replace (IZR s + 1) with (IZR (Z.succ s)) by (unfold Z.succ; rewrite plus_IZR; reflexivity); rewrite <- mult_IZR; apply IZR_lt; lia).
  assert (HsR : 0 <= IZR s) by (apply IZR_le; exact Hs).
  split.
  - rewrite <- (sqrt_square (IZR s * / D)) by (apply Rmult_le_pos; [lra|apply Rlt_le, Rinv_0_lt_compat; lra]).
    apply sqrt_le_1_alt. unfold Rdiv.
    replace (IZR s * / D * (IZR s * / D)) with (IZR s * IZR s * / (D * D)) by (field; lra).
    apply Rmult_le_compat_r; [apply Rlt_le, Rinv_0_lt_compat; nra|exact Hs2].
  - rewrite plus_IZR.
    rewrite <- (sqrt_square ((IZR s + 1) * / D)) by (apply Rmult_le_pos; [lra|apply Rlt_le, Rinv_0_lt_compat; lra]).
    apply sqrt_le_1_alt. unfold Rdiv.
    replace ((IZR s + 1) * / D * ((IZR s + 1) * / D)) with ((IZR s + 1) * (IZR s + 1) * / (D * D)) by (field; lra).
    apply Rmult_le_compat_r; [apply Rlt_le, Rinv_0_lt_compat; nra|lra].
Qed.

(** [B2]'s bound with the square roots sqrt (1 - eps_m) and sqrt m replaced by s1, s2. *)
Definition rms_factorQ (s1 s2 : Q) : Q := ((1 + uQ) / ((1 - uQ) * s1) * (1 + uQ) * (1 + uQ) - 1) / s2.
Definition rms_boundQ (m a M s1 s2 : Q) : Q := rms_factorQ s1 s2 * a + etaQ * ((1 + uQ) * M + 1).

Definition rms_eps_mQ (n : Z) (m : Q) : Q := gammaQ (n + 2) + 4 * etaQ / m.

Lemma rms_eps_mQ_B2 : forall (n : nat) m, INR (n + 2) * u < 1 -> ~ (m == 0)%Q ->
  Q2R (rms_eps_mQ (Z.of_nat n) m) = rms_eps_m n (Q2R m).
Proof.
  intros n m Hu Hm. unfold rms_eps_mQ, rms_eps_m.
  replace (Z.of_nat n + 2)%Z with (Z.of_nat (n + 2)) by lia.
  rewrite Q2R_plus, Q2R_div by exact Hm. rewrite Q2R_mult, gammaQ_gamma, etaQ_eta by exact Hu.
  replace (Q2R 4) with 4 by (unfold Q2R; simpl; lra). reflexivity.
Qed.

(** The real bound B2_rmsnorm_bound states, for |x_j w_j| = a, max(|x_j|, |w_j|) = M. *)
Definition rms_bound_real (n : nat) (m a M : R) : R :=
  rms_rel (rms_eps_r (rms_eps_m n m)) * a / sqrt m + eta * ((1 + u) * M + 1).

(** With s1, s2 at most the square roots the bound is at most rms_boundQ; at least, it is at least. *)
Lemma rms_boundQ_B2 : forall (n : nat) m a M s1 s2,
  0 < Q2R m -> 0 <= Q2R a -> 0 <= rms_eps_m n (Q2R m) < 1 ->
  (0 < Q2R s1 <= sqrt (1 - rms_eps_m n (Q2R m)) -> 0 < Q2R s2 <= sqrt (Q2R m) ->
     rms_bound_real n (Q2R m) (Q2R a) (Q2R M) <= Q2R (rms_boundQ m a M s1 s2)) /\
  (sqrt (1 - rms_eps_m n (Q2R m)) <= Q2R s1 -> sqrt (Q2R m) <= Q2R s2 ->
     Q2R (rms_boundQ m a M s1 s2) <= rms_bound_real n (Q2R m) (Q2R a) (Q2R M)).
Proof.
  intros n m a M s1 s2 Hm Ha He.
  pose proof u_pos. pose proof u_small. pose proof eta_pos.
  set (em := rms_eps_m n (Q2R m)) in *.
  assert (Hq1 : 0 < sqrt (1 - em)) by (apply sqrt_lt_R0; lra).
  assert (Hq2 : 0 < sqrt (Q2R m)) by (apply sqrt_lt_R0; lra).
  (* the bound as a function of the two square roots *)
  set (f := fun x y : R => ((1 + u) / ((1 - u) * x) * (1 + u) * (1 + u) - 1) * Q2R a / y + eta * ((1 + u) * Q2R M + 1)).
  assert (Hreal : rms_bound_real n (Q2R m) (Q2R a) (Q2R M) = f (sqrt (1 - em)) (sqrt (Q2R m))).
  { unfold rms_bound_real, f, rms_rel, rms_eps_r. fold em. field. split; lra. }
  assert (HQ : forall x y, Q2R x <> 0 -> Q2R y <> 0 -> Q2R (rms_boundQ m a M x y) = f (Q2R x) (Q2R y)).
  { intros x y Hx Hy. unfold rms_boundQ, rms_factorQ, f.
    assert (Hx' : ~ (x == 0)%Q) by (intro E; apply Hx; apply Qeq_eqR in E; rewrite E; unfold Q2R; simpl; lra).
    assert (Hy' : ~ (y == 0)%Q) by (intro E; apply Hy; apply Qeq_eqR in E; rewrite E; unfold Q2R; simpl; lra).
    assert (Hxu : ~ ((1 - uQ) * x == 0)%Q).
    { intro E. apply Qeq_eqR in E. rewrite Q2R_mult, Q2R_minus, uQ_u, Q2R_1 in E.
      replace (Q2R 0) with 0 in E by (unfold Q2R; simpl; lra).
      apply Hx. apply (Rmult_eq_reg_l (1 - u)); [rewrite E; ring|lra]. }
    repeat first [rewrite Q2R_plus | rewrite Q2R_minus | rewrite Q2R_mult | rewrite Q2R_div by assumption].
    rewrite uQ_u, etaQ_eta, Q2R_1. unfold Rdiv. ring. }
  (* g(x) = (1+u)^3 / ((1-u) x) - 1 decreases in x > 0 *)
  assert (Hg : forall x y, 0 < x <= y -> (1 + u) / ((1 - u) * y) * (1 + u) * (1 + u) <= (1 + u) / ((1 - u) * x) * (1 + u) * (1 + u)).
  { intros x y Hxy. apply Rmult_le_compat_r; [lra|]. apply Rmult_le_compat_r; [lra|].
    unfold Rdiv. apply Rmult_le_compat_l; [lra|]. apply Rinv_le_contravar; [nra|]. apply Rmult_le_compat_l; lra. }
  assert (Hg0 : 0 <= (1 + u) / ((1 - u) * sqrt (1 - em)) * (1 + u) * (1 + u) - 1).
  { assert (sqrt (1 - em) <= 1) by (apply Rle_trans with (sqrt 1); [apply sqrt_le_1_alt; lra|rewrite sqrt_1; lra]).
    assert (1 <= (1 + u) / ((1 - u) * sqrt (1 - em))).
    { apply (Rmult_le_reg_r ((1 - u) * sqrt (1 - em))); [nra|]. unfold Rdiv. rewrite Rmult_assoc, Rinv_l by nra. nra. }
    assert (1 <= (1 + u) * (1 + u)) by nra. nra. }
  set (g := fun x => (1 + u) / ((1 - u) * x) * (1 + u) * (1 + u) - 1) in *.
  assert (Hf : forall x y, f x y = g x * Q2R a * / y + eta * ((1 + u) * Q2R M + 1)) by (intros; unfold f, g, Rdiv; ring).
  assert (Hgm : forall x y, 0 < x <= y -> g y <= g x) by (intros x y Hxy; unfold g; pose proof (Hg x y Hxy); lra).
  assert (Hg0' : 0 <= g (sqrt (1 - em))) by (unfold g; exact Hg0).
  split.
  - intros (Hs1 & Hs1') (Hs2 & Hs2'). rewrite Hreal, HQ by lra. rewrite !Hf.
    apply Rplus_le_compat_r.
    apply Rmult_le_compat; [apply Rmult_le_pos; [exact Hg0'|exact Ha]|apply Rlt_le, Rinv_0_lt_compat; lra| |].
    + apply Rmult_le_compat_r; [exact Ha|]. apply Hgm. lra.
    + apply Rinv_le_contravar; lra.
  - intros Hs1 Hs2. rewrite Hreal, HQ by lra. rewrite !Hf.
    apply Rplus_le_compat_r.
    assert (Hgq : g (Q2R s1) <= g (sqrt (1 - em))) by (apply Hgm; lra).
    destruct (Rle_or_lt (g (Q2R s1)) 0) as [Hneg|Hpos].
    + assert (0 <= Q2R a * / Q2R s2) by (apply Rmult_le_pos; [exact Ha|apply Rlt_le, Rinv_0_lt_compat; lra]).
      assert (g (Q2R s1) * Q2R a * / Q2R s2 <= 0).
      { rewrite Rmult_assoc. rewrite <- (Rmult_0_l (Q2R a * / Q2R s2)). apply Rmult_le_compat_r; lra. }
      assert (0 <= g (sqrt (1 - em)) * Q2R a * / sqrt (Q2R m)).
      { apply Rmult_le_pos; [apply Rmult_le_pos; [exact Hg0'|exact Ha]|apply Rlt_le, Rinv_0_lt_compat; lra]. }
      lra.
    + apply Rmult_le_compat; [apply Rmult_le_pos; lra|apply Rlt_le, Rinv_0_lt_compat; lra| |].
      * apply Rmult_le_compat_r; [exact Ha|exact Hgq].
      * apply Rinv_le_contravar; lra.
Qed.

(** The enclosure of B2's bound that scripts/prove computes, (upper, lower): the square roots
    of 1 - eps_m and m to k bits, computed once per row ([rms_roots]), then each output's
    bound from them. Valid when [rms_roots_ok] (checked by computation, as each value is). *)
Definition rms_roots (n : Z) (m : Q) (k : positive) : Q * Q * Q * Q :=
  let q1 := Qred (1 - rms_eps_mQ n m) in
  let l1 := Qred (sqrt_lo q1 k) in let l2 := Qred (sqrt_lo m k) in
  (l1, l2, Qred (rms_factorQ l1 l2), Qred (rms_factorQ (sqrt_hi q1 k) (sqrt_hi m k))).

Definition rms_enclosure_from (r : Q * Q * Q * Q) (m a M : Q) : Q * Q :=
  let '(_, _, fl, fh) := r in ((fl * a + etaQ * ((1 + uQ) * M + 1))%Q, (fh * a + etaQ * ((1 + uQ) * M + 1))%Q).

Definition rms_enclosureQ (n : Z) (m a M : Q) (k : positive) : Q * Q :=
  rms_enclosure_from (rms_roots n m k) m a M.

Definition Qlt_bool (x y : Q) : bool := negb (Qle_bool y x).

Lemma Qlt_bool_R : forall x y, Qlt_bool x y = true -> Q2R x < Q2R y.
Proof.
  intros x y H. unfold Qlt_bool in H. apply Bool.negb_true_iff in H.
  apply Qlt_Rlt. apply Qnot_le_lt. intro Hle. apply Qle_bool_iff in Hle. congruence.
Qed.

Definition rms_roots_ok (n : Z) (m : Q) (r : Q * Q * Q * Q) : bool :=
  let '(l1, l2, _, _) := r in
  let em := rms_eps_mQ n m in
  Qlt_bool 0 m && Qle_bool 0 em && Qlt_bool em 1 && Qlt_bool 0 l1 && Qlt_bool 0 l2.

Lemma rms_enclosureQ_B2 : forall (n : nat) m a M k,
  INR (n + 2) * u < 1 -> 0 <= Q2R a -> rms_roots_ok (Z.of_nat n) m (rms_roots (Z.of_nat n) m k) = true ->
  Q2R (snd (rms_enclosureQ (Z.of_nat n) m a M k)) <= rms_bound_real n (Q2R m) (Q2R a) (Q2R M) <=
  Q2R (fst (rms_enclosureQ (Z.of_nat n) m a M k)).
Proof.
  intros n m a M k Hu Ha Hok.
  unfold rms_enclosureQ, rms_enclosure_from, rms_roots, rms_roots_ok in *.
  set (q1 := Qred (1 - rms_eps_mQ (Z.of_nat n) m)) in *.
  apply andb_true_iff in Hok. destruct Hok as [Hok H5]. apply andb_true_iff in Hok. destruct Hok as [Hok H4].
  apply andb_true_iff in Hok. destruct Hok as [Hok H3]. apply andb_true_iff in Hok. destruct Hok as [H1 H2].
  apply Qlt_bool_R in H1. apply Qle_bool_iff, Qle_Rle in H2. apply Qlt_bool_R in H3.
  apply Qlt_bool_R in H4. apply Qlt_bool_R in H5.
  rewrite !Qred_correct in H4, H5.
  replace (Q2R 0) with 0 in * by (unfold Q2R; simpl; lra).
  replace (Q2R 1) with 1 in * by (unfold Q2R; simpl; lra).
  assert (Hm0 : ~ (m == 0)%Q) by (intro E; apply Qeq_eqR in E; replace (Q2R 0) with 0 in E by (unfold Q2R; simpl; lra); lra).
  rewrite rms_eps_mQ_B2 in H2, H3 by assumption.
  assert (Hq1 : Q2R q1 = 1 - rms_eps_m n (Q2R m)).
  { unfold q1. rewrite Qred_correct, Q2R_minus, rms_eps_mQ_B2 by assumption. unfold Q2R at 1. simpl. lra. }
  destruct (sqrt_enclosure q1 k ltac:(lra)) as (E1lo & E1hi).
  destruct (sqrt_enclosure m k ltac:(lra)) as (E2lo & E2hi).
  rewrite Hq1 in E1lo, E1hi.
  assert (Hr : forall x y, Q2R (Qred (rms_factorQ x y) * a + etaQ * ((1 + uQ) * M + 1)) = Q2R (rms_boundQ m a M x y)).
  { intros x y. apply Qeq_eqR. unfold rms_boundQ. rewrite Qred_correct. reflexivity. }
  assert (Hr' : forall x y, Q2R (rms_boundQ m a M (Qred x) (Qred y)) = Q2R (rms_boundQ m a M x y)).
  { intros x y. apply Qeq_eqR. unfold rms_boundQ, rms_factorQ. rewrite !Qred_correct. reflexivity. }
  destruct (rms_boundQ_B2 n m a M (sqrt_lo q1 k) (sqrt_lo m k) H1 Ha (conj H2 H3)) as (Hup & _).
  destruct (rms_boundQ_B2 n m a M (sqrt_hi q1 k) (sqrt_hi m k) H1 Ha (conj H2 H3)) as (_ & Hlow).
  cbn [fst snd]. rewrite !Hr, !Hr'. split.
  - apply Hlow; assumption.
  - apply Hup; split; assumption.
Qed.
