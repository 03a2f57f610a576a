(** * spec/arithmetic.md A1: binary32, round to nearest even, gradual underflow

    The floating-point model every proof of bounds.v works in, built on Flocq (Boldo and
    Melquiond): the reals representable in IEEE binary32 with gradual underflow are Flocq's
    [FLT_exp (-149) 24] format, and every operation is [rnd] of its exact real result (round
    to nearest, ties to even). [A1_binary32_ops] shows that Flocq's IEEE 754 binary32
    operations (Bplus, Bmult, Bfma, Bdiv, Bsqrt in mode_NE) compute exactly [rnd] of the real
    operation on their inputs whenever their result is finite: the model is IEEE binary32
    under the hypothesis of every clause of spec/bounds.md, "no overflow".

    From it, the standard model with gradual underflow (spec/bounds.md, "Notation and the
    standard model"; Higham, Accuracy and Stability, 2nd ed., eq. 2.4 and 2.8):
    [A1_standard_model], [A1_sum_exact_underflow] (a sum of two floats has no absolute error,
    Hauser 1996), [A1_normal_relative] (a result of magnitude >= 2^-126 has none either),
    and the algebra of gamma_n (Higham Lemma 3.1, 3.3). *)

From Coq Require Import Reals Psatz Lra.
From Flocq Require Import Core Relative Plus_error.
From Flocq Require BinarySingleNaN.

Open Scope R_scope.

(** ** The format and the rounding *)

Definition prec : Z := 24.
Definition emin : Z := -149.
Definition fexp : Z -> Z := FLT_exp emin prec.
Definition rnd (x : R) : R := round radix2 fexp ZnearestE x.
(** [F x]: x is a binary32 value (without the bound on the exponent: overflow is the
    hypothesis every clause excludes, see [A1_binary32_ops]). *)
Definition F (x : R) : Prop := generic_format radix2 fexp x.

(** Unit roundoff u = 2^-24 and eta = 2^-150, half the smallest subnormal. *)
Definition u : R := bpow radix2 (-24).
Definition eta : R := bpow radix2 (-150).

#[export] Instance fexp_valid : Valid_exp fexp.
Proof. unfold fexp. apply FLT_exp_valid. reflexivity. Qed.

#[export] Instance prec_gt_0 : Prec_gt_0 prec.
Proof. unfold Prec_gt_0, prec. lia. Qed.

Lemma u_val : u = / 16777216.
Proof. unfold u. simpl. lra. Qed.

Lemma eta_val : eta = / 1427247692705959881058285969449495136382746624.
Proof. unfold eta. simpl. lra. Qed.

Lemma u_pos : 0 < u.
Proof. apply bpow_gt_0. Qed.

Lemma u_small : u <= / 16777216.
Proof. rewrite u_val. lra. Qed.

Lemma eta_pos : 0 < eta.
Proof. apply bpow_gt_0. Qed.

Lemma F_rnd : forall x, F (rnd x).
Proof. intro x. apply generic_format_round; auto with typeclass_instances. Qed.

Lemma F_0 : F 0.
Proof. apply generic_format_0. Qed.

Lemma F_opp : forall x, F x -> F (- x).
Proof. intros x Hx. now apply generic_format_opp. Qed.

Lemma rnd_F : forall x, F x -> rnd x = x.
Proof. intros x Hx. apply round_generic; auto with typeclass_instances. Qed.

Lemma rnd_0 : rnd 0 = 0.
Proof. apply round_0. auto with typeclass_instances. Qed.

Lemma rnd_opp : forall x, rnd (- x) = - rnd x.
Proof. intro x. unfold rnd. apply round_NE_opp. Qed.

Lemma rnd_nonneg : forall x, 0 <= x -> 0 <= rnd x.
Proof.
  intros x Hx. rewrite <- rnd_0. apply round_le; auto with typeclass_instances.
Qed.

Lemma rnd_le : forall x y, x <= y -> rnd x <= rnd y.
Proof. intros. apply round_le; auto with typeclass_instances. Qed.

(** ** The standard model with gradual underflow *)

(** fl(x) = x (1 + d) + e, |d| <= u, |e| <= eta, d e = 0, for every real x: a product, a
    quotient, a square root or an FMA of floats is such an x. *)
Theorem A1_standard_model :
  forall x, exists d e, Rabs d <= u /\ Rabs e <= eta /\ d * e = 0 /\ rnd x = x * (1 + d) + e.
Proof.
  intro x.
  destruct (error_N_FLT radix2 emin prec (eq_refl _ : (0 < prec)%Z)
              (fun t => negb (Z.even t)) x) as (d & e & Hd & He & Hde & Hr).
  exists d, e. unfold u, eta. repeat split.
  - eapply Rle_trans; [exact Hd|]. simpl. lra.
  - eapply Rle_trans; [exact He|]. simpl. lra.
  - exact Hde.
  - exact Hr.
Qed.

(** The absolute-only form: |fl(x) - x| <= u |x| + eta. *)
Lemma rnd_abs_err : forall x, Rabs (rnd x - x) <= u * Rabs x + eta.
Proof.
  intro x. destruct (A1_standard_model x) as (d & e & Hd & He & _ & Hr).
  rewrite Hr.
  replace (x * (1 + d) + e - x) with (x * d + e) by ring.
  eapply Rle_trans; [apply Rabs_triang|].
  rewrite Rabs_mult. pose proof (Rabs_pos x). nra.
Qed.

(** A sum (or difference) of two floats: fl(a + b) = (a + b)(1 + d), |d| <= u, no absolute
    error (a sum that lands among the subnormals is exact). *)
Theorem A1_sum_exact_underflow :
  forall a b, F a -> F b -> exists d, Rabs d <= u /\ rnd (a + b) = (a + b) * (1 + d).
Proof.
  intros a b Ha Hb.
  destruct (FLT_plus_error_N_ex radix2 emin prec (fun t => negb (Z.even t)) a b Ha Hb)
    as (d & Hd & Hr).
  exists d. split; [|exact Hr].
  eapply Rle_trans; [exact Hd|].
  unfold u_ro, u. simpl.
  assert (0 < / 2 * / 8388608) by lra.
  apply Rmult_le_reg_r with (1 + / 2 * / 8388608); [lra|].
  unfold Rdiv. rewrite Rmult_assoc, Rinv_l by lra. nra.
Qed.

(** A result of magnitude >= 2^-126 (the smallest normal) has no absolute error. *)
Theorem A1_normal_relative :
  forall x, bpow radix2 (-126) <= Rabs x -> exists d, Rabs d <= u /\ rnd x = x * (1 + d).
Proof.
  intros x Hx.
  destruct (relative_error_N_FLT_ex radix2 emin prec (eq_refl _ : (0 < prec)%Z)
              (fun t => negb (Z.even t)) x) as (d & Hd & Hr).
  - unfold emin, prec. simpl (-149 + 24 - 1)%Z. exact Hx.
  - exists d. split; [|exact Hr]. eapply Rle_trans; [exact Hd|]. unfold u. simpl. lra.
Qed.

(** Every float in (0, 2^-126) is a multiple of 2^-149, so a nonzero float is >= 2^-149. *)
Lemma F_abs_ge : forall x, F x -> x <> 0 -> bpow radix2 (-149) <= Rabs x.
Proof.
  intros x Hx Hnz.
  unfold F, generic_format, F2R in Hx. simpl in Hx.
  rewrite Hx. rewrite Rabs_mult. rewrite (Rabs_pos_eq (bpow _ _)) by apply bpow_ge_0.
  set (m := Ztrunc (scaled_mantissa radix2 fexp x)) in *.
  assert (Hm : m <> 0%Z). { intro Hm0. apply Hnz. rewrite Hx, Hm0. simpl. ring. }
  assert (H1 : 1 <= Rabs (IZR m)).
  { rewrite <- abs_IZR. apply IZR_le. lia. }
  assert (H2 : bpow radix2 (-149) <= bpow radix2 (cexp radix2 fexp x)).
  { apply bpow_le. unfold cexp, fexp, FLT_exp, emin. lia. }
  pose proof (bpow_ge_0 radix2 (-149)). nra.
Qed.

(** ** IEEE 754 binary32 is this model while nothing overflows *)

Section Binary32.
Import BinarySingleNaN.

(** binary32: 24 bits of precision, emax = 128; its format is FLT(-149, 24). *)
Definition b32 := binary_float 24 128.

#[export] Instance b32_prec_gt_0 : Prec_gt_0 24.
Proof. unfold Prec_gt_0. lia. Qed.
#[export] Instance b32_prec_lt_emax : Prec_lt_emax 24 128.
Proof. unfold Prec_lt_emax. lia. Qed.

Lemma b32_fexp : SpecFloat.fexp 24 128 = fexp.
Proof. reflexivity. Qed.

Lemma overflow_not_finite :
  forall s (x : b32), B2SF x = binary_overflow 24 128 mode_NE s -> is_finite x = false.
Proof.
  intros s x H.
  destruct x as [sx|sx| |sx mx ex Hx]; simpl in H; try discriminate; try reflexivity.
Qed.

(** For every IEEE binary32 operation in round-to-nearest-even: if its result is finite, its
    value is [rnd] of the exact result on its inputs' values. *)
Theorem A1_binary32_ops :
  forall x y z : b32,
  (is_finite (Bplus mode_NE x y) = true -> is_finite x = true -> is_finite y = true ->
     B2R (Bplus mode_NE x y) = rnd (B2R x + B2R y)) /\
  (is_finite (Bmult mode_NE x y) = true ->
     B2R (Bmult mode_NE x y) = rnd (B2R x * B2R y)) /\
  (is_finite (Bfma mode_NE x y z) = true -> is_finite x = true -> is_finite y = true ->
     is_finite z = true -> B2R (Bfma mode_NE x y z) = rnd (B2R x * B2R y + B2R z)) /\
  (is_finite (Bdiv mode_NE x y) = true -> B2R y <> 0 ->
     B2R (Bdiv mode_NE x y) = rnd (B2R x / B2R y)) /\
  (B2R (Bsqrt mode_NE x) = rnd (sqrt (B2R x))).
Proof.
  intros x y z. repeat split.
  - intros Hr Hx Hy. pose proof (Bplus_correct 24 128 _ _ mode_NE x y Hx Hy) as H.
    destruct Rlt_bool; [now destruct H|].
    destruct H as [H _]. apply overflow_not_finite in H. congruence.
  - intros Hr. pose proof (Bmult_correct 24 128 _ _ mode_NE x y) as H.
    destruct Rlt_bool; [now destruct H|].
    apply overflow_not_finite in H. congruence.
  - intros Hr Hx Hy Hz. pose proof (Bfma_correct 24 128 _ _ mode_NE x y z Hx Hy Hz) as H.
    simpl in H. destruct Rlt_bool; [now destruct H|].
    apply overflow_not_finite in H. congruence.
  - intros Hr Hy. pose proof (Bdiv_correct 24 128 _ _ mode_NE x y Hy) as H.
    destruct Rlt_bool; [now destruct H|].
    apply overflow_not_finite in H. congruence.
  - pose proof (Bsqrt_correct 24 128 _ _ mode_NE x) as H. now destruct H.
Qed.

(** The value of a binary32 is a float of the model. *)
Lemma A1_binary32_values : forall x : b32, F (B2R x).
Proof. intro x. apply (generic_format_B2R 24 128 x). Qed.

End Binary32.

(** ** gamma_n = n u / (1 - n u) (Higham, Lemma 3.1) *)

Definition gamma (n : nat) : R := INR n * u / (1 - INR n * u).

Lemma gamma_0 : gamma 0 = 0.
Proof. unfold gamma. simpl. unfold Rdiv. ring. Qed.

Lemma one_plus_gamma : forall n, INR n * u < 1 -> 1 + gamma n = / (1 - INR n * u).
Proof. intros n H. unfold gamma. field. lra. Qed.

Lemma gamma_nonneg : forall n, INR n * u < 1 -> 0 <= gamma n.
Proof.
  intros n H. unfold gamma. pose proof (pos_INR n). pose proof u_pos.
  apply Rmult_le_pos; [nra|]. apply Rlt_le, Rinv_0_lt_compat. lra.
Qed.

Lemma gamma_mono : forall m n, (m <= n)%nat -> INR n * u < 1 -> gamma m <= gamma n.
Proof.
  intros m n Hmn Hn.
  apply le_INR in Hmn. pose proof (pos_INR m). pose proof u_pos.
  assert (INR m * u <= INR n * u) by nra.
  assert (Hm : INR m * u < 1) by lra.
  cut (1 + gamma m <= 1 + gamma n); [lra|].
  rewrite !one_plus_gamma by assumption.
  apply Rinv_le_contravar; lra.
Qed.

(** (1 + u)(1 + gamma_k) <= 1 + gamma_{k+1}: one more rounding. *)
Lemma gamma_step : forall k, INR (S k) * u < 1 -> (1 + u) * (1 + gamma k) <= 1 + gamma (S k).
Proof.
  intros k H. rewrite S_INR in *. pose proof (pos_INR k). pose proof u_pos.
  assert (Hk : INR k * u < 1) by nra.
  rewrite !one_plus_gamma; try rewrite S_INR; try lra.
  apply Rmult_le_reg_r with ((1 - INR k * u) * (1 - (INR k + 1) * u)); [nra|].
  field_simplify; try lra. nra.
Qed.

Lemma u_le_gamma : forall k, (1 <= k)%nat -> INR k * u < 1 -> u <= gamma k.
Proof.
  intros k Hk H. pose proof (gamma_mono 1 k Hk H).
  assert (gamma 1 = u / (1 - u)) by (unfold gamma; simpl; now rewrite Rmult_1_l).
  pose proof u_pos. pose proof u_small.
  assert (u <= u / (1 - u)).
  { unfold Rdiv. rewrite <- (Rmult_1_r u) at 1. apply Rmult_le_compat_l; [lra|].
    rewrite <- Rinv_1. apply Rinv_le_contravar; lra. }
  lra.
Qed.

(** (1 + gamma_j)(1 + gamma_k) <= 1 + gamma_{j+k} (Higham, Lemma 3.3). *)
Lemma gamma_mul : forall j k, INR (j + k) * u < 1 -> (1 + gamma j) * (1 + gamma k) <= 1 + gamma (j + k).
Proof.
  intros j k H. pose proof H as H'. rewrite plus_INR in H'.
  pose proof (pos_INR j). pose proof (pos_INR k). pose proof u_pos.
  assert (Hj : INR j * u < 1) by nra. assert (Hk : INR k * u < 1) by nra.
  rewrite (one_plus_gamma j Hj), (one_plus_gamma k Hk), (one_plus_gamma (j + k) H).
  rewrite plus_INR.
  rewrite <- Rinv_mult.
  apply Rinv_le_contravar; [lra|].
  assert (0 <= INR j * u * (INR k * u)) by (apply Rmult_le_pos; nra).
  nra.
Qed.

Lemma gamma_lt_1 : forall n, INR n * u <= / 3 -> gamma n <= / 2.
Proof.
  intros n H. pose proof (pos_INR n). pose proof u_pos. unfold gamma.
  apply Rmult_le_reg_r with (1 - INR n * u); [lra|].
  unfold Rdiv. rewrite Rmult_assoc, Rinv_l by lra. lra.
Qed.

Lemma F_1 : F 1.
Proof.
  change 1 with (bpow radix2 0). apply generic_format_bpow'; [exact fexp_valid|].
  unfold fexp, FLT_exp, emin, prec. simpl. lia.
Qed.
