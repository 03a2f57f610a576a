(** * spec/bounds.md: the error bounds B1-B10, machine-checked

    Each theorem is named after its clause. The model is arithmetic.v's: binary32 values with
    gradual underflow, every operation [rnd] of its exact result (A1_binary32_ops: IEEE
    binary32 in round-to-nearest-even while nothing overflows, the hypothesis of every
    clause). B0, the measured error of akv::exp, is not proven: the theorems that use it
    (B5, B8) take it as the hypotheses [B0_exp_float] and [B0_exp_error] of sections Exp and
    Exp8, so after the section closes it is an explicit premise of each of them. B6's softmax
    composition takes any bounds E_j of the exps' errors (B5's, under B0). *)

From Coq Require Import Reals Psatz Lra List Permutation Arith.
From Flocq Require Import Core.
From Akv Require Import arithmetic.
Import ListNotations.

Open Scope R_scope.

(** ** Two steps of every error analysis below *)

(** One rounding of an FMA (or of a product added to a partial sum): the partial sum's
    error grows by one relative rounding, the new product gets one of its own, and one
    absolute error <= eta joins. *)
Lemma step_fma :
  forall p T T' A m g g' d e,
  0 <= g -> 0 <= m -> Rabs d <= u -> Rabs e <= eta -> Rabs T <= A ->
  Rabs (T' - T) <= g * A + (1 + g) * m * eta ->
  (1 + u) * (1 + g) <= 1 + g' -> u <= g' ->
  Rabs ((p + T') * (1 + d) + e - (p + T)) <= g' * (Rabs p + A) + (1 + g') * (m + 1) * eta.
Proof.
  intros p T T' A m g g' d e Hg Hm Hd He HT HE Hgg Hug.
  pose proof u_pos as Hu. pose proof eta_pos as Heta.
  replace ((p + T') * (1 + d) + e - (p + T)) with ((T' - T) * (1 + d) + d * (p + T) + e) by ring.
  set (E := Rabs (T' - T)).
  assert (H1 : Rabs ((T' - T) * (1 + d) + d * (p + T) + e) <= E * (1 + u) + u * (Rabs p + A) + eta).
  { eapply Rle_trans; [apply Rabs_triang|].
    apply Rplus_le_compat; [|exact He].
    eapply Rle_trans; [apply Rabs_triang|].
    rewrite !Rabs_mult.
    apply Rplus_le_compat.
    - apply Rmult_le_compat_l; [apply Rabs_pos|].
      eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_R1. lra.
    - apply Rmult_le_compat; try apply Rabs_pos; [exact Hd|].
      eapply Rle_trans; [apply Rabs_triang|]. lra. }
  assert (HA : 0 <= A) by (eapply Rle_trans; [apply Rabs_pos|exact HT]).
  assert (H2 : E * (1 + u) <= (g * A + (1 + g) * m * eta) * (1 + u)).
  { apply Rmult_le_compat_r; [lra|exact HE]. }
  assert (Hk : (1 + u) * g + u <= g') by lra.
  assert (H3 : (1 + u) * g * A + u * A <= g' * A).
  { replace ((1 + u) * g * A + u * A) with (((1 + u) * g + u) * A) by ring.
    apply Rmult_le_compat_r; lra. }
  assert (H4 : (1 + u) * (1 + g) * m * eta <= (1 + g') * m * eta).
  { apply Rmult_le_compat_r; [lra|]. apply Rmult_le_compat_r; lra. }
  assert (H5 : u * Rabs p <= g' * Rabs p) by (apply Rmult_le_compat_r; [apply Rabs_pos|lra]).
  nra.
Qed.

(** One rounding of a sum of two floats: relative only (A1_sum_exact_underflow). *)
Lemma step_add :
  forall L L' R R' AL AR ml mr gl gr gm g d,
  Rabs (L' - L) <= gl * AL + (1 + gl) * ml * eta ->
  Rabs (R' - R) <= gr * AR + (1 + gr) * mr * eta ->
  Rabs L <= AL -> Rabs R <= AR -> 0 <= ml -> 0 <= mr ->
  0 <= gl <= gm -> 0 <= gr <= gm -> (1 + u) * (1 + gm) <= 1 + g -> Rabs d <= u ->
  Rabs ((L' + R') * (1 + d) - (L + R)) <= g * (AL + AR) + (1 + g) * (ml + mr) * eta.
Proof.
  intros L L' R R' AL AR ml mr gl gr gm g d HL HR HAL HAR Hml Hmr Hgl Hgr Hg Hd.
  pose proof u_pos as Hu. pose proof eta_pos as Heta.
  assert (HAL0 : 0 <= AL) by (eapply Rle_trans; [apply Rabs_pos|exact HAL]).
  assert (HAR0 : 0 <= AR) by (eapply Rle_trans; [apply Rabs_pos|exact HAR]).
  set (EL := Rabs (L' - L)). set (ER := Rabs (R' - R)).
  assert (HL' : EL <= gm * AL + (1 + gm) * ml * eta).
  { eapply Rle_trans; [exact HL|]. apply Rplus_le_compat; [apply Rmult_le_compat_r; lra|].
    apply Rmult_le_compat_r; [lra|]. apply Rmult_le_compat_r; lra. }
  assert (HR' : ER <= gm * AR + (1 + gm) * mr * eta).
  { eapply Rle_trans; [exact HR|]. apply Rplus_le_compat; [apply Rmult_le_compat_r; lra|].
    apply Rmult_le_compat_r; [lra|]. apply Rmult_le_compat_r; lra. }
  replace ((L' + R') * (1 + d) - (L + R)) with (((L' - L) + (R' - R)) * (1 + d) + d * (L + R)) by ring.
  assert (H1 : Rabs (((L' - L) + (R' - R)) * (1 + d) + d * (L + R)) <= (EL + ER) * (1 + u) + u * (AL + AR)).
  { eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult.
    apply Rplus_le_compat.
    - apply Rmult_le_compat; try apply Rabs_pos.
      + apply Rabs_triang.
      + eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_R1. lra.
    - apply Rmult_le_compat; try apply Rabs_pos; [exact Hd|].
      eapply Rle_trans; [apply Rabs_triang|]. lra. }
  assert (H2 : (EL + ER) * (1 + u) <= (gm * (AL + AR) + (1 + gm) * (ml + mr) * eta) * (1 + u)).
  { apply Rmult_le_compat_r; lra. }
  assert (H3 : (1 + u) * (1 + gm) * (ml + mr) * eta <= (1 + g) * (ml + mr) * eta).
  { apply Rmult_le_compat_r; [lra|]. apply Rmult_le_compat_r; lra. }
  assert (H4 : ((1 + u) * gm + u) * (AL + AR) <= g * (AL + AR)).
  { apply Rmult_le_compat_r; lra. }
  lra.
Qed.

(** p + q >= 2 when p q >= 1 (p, q >= 0). *)
Lemma sum_ge_2 : forall p q, 0 <= p -> 0 <= q -> 1 <= p * q -> 2 <= p + q.
Proof.
  intros p q Hp Hq Hpq.
  assert (Hs : 4 <= (p + q) * (p + q)).
  { replace ((p + q) * (p + q)) with ((p - q) * (p - q) + 4 * (p * q)) by ring.
    pose proof (Rle_0_sqr (p - q)). unfold Rsqr in *. lra. }
  destruct (Rle_or_lt 2 (p + q)) as [H|H]; [exact H|].
  assert ((p + q) * (p + q) < 2 * 2) by (apply Rmult_le_0_lt_compat; lra). lra.
Qed.

(** ** [B1] Dot product and matmul row *)

(** Any evaluation of a sum of products is a tree: a leaf is a product rounded on its own
    ([DProd]) or the +0 a chain starts from ([DZero]); an inner node is an FMA of a product
    into a partial sum ([DFma]) or a rounded sum of two partial sums ([DAdd]). Every order
    (left to right, pairwise, SIMD lanes combined in any way, split-K, FMA chains from +0 or
    from the first product) is such a tree. The inputs may be any reals; floats are a case. *)
Inductive dot_tree : Type :=
| DZero : dot_tree
| DProd : R -> R -> dot_tree
| DFma : R -> R -> dot_tree -> dot_tree
| DAdd : dot_tree -> dot_tree -> dot_tree.

Fixpoint eval (t : dot_tree) : R :=
  match t with
  | DZero => 0
  | DProd x y => rnd (x * y)
  | DFma x y s => rnd (x * y + eval s)
  | DAdd l r => rnd (eval l + eval r)
  end.

(** The products a tree sums, in leaf order. *)
Fixpoint terms (t : dot_tree) : list (R * R) :=
  match t with
  | DZero => []
  | DProd x y => [(x, y)]
  | DFma x y s => (x, y) :: terms s
  | DAdd l r => terms l ++ terms r
  end.

(** The most roundings any product passes through: its own, and every FMA or sum above it
    (a sum with a product-free side, +0 + s, is exact and not counted). *)
Fixpoint depth (t : dot_tree) : nat :=
  match t with
  | DZero => 0
  | DProd _ _ => 1
  | DFma _ _ s => S (depth s)
  | DAdd l r =>
      match terms l, terms r with
      | [], _ => depth r
      | _, [] => depth l
      | _, _ => S (Nat.max (depth l) (depth r))
      end
  end.

Definition sum_prod (l : list (R * R)) : R := fold_right (fun p s => fst p * snd p + s) 0 l.
Definition sum_abs (l : list (R * R)) : R := fold_right (fun p s => Rabs (fst p * snd p) + s) 0 l.

Lemma sum_prod_app : forall a b, sum_prod (a ++ b) = sum_prod a + sum_prod b.
Proof. induction a as [|p a IH]; intro b; simpl; [ring|rewrite IH; ring]. Qed.

Lemma sum_abs_app : forall a b, sum_abs (a ++ b) = sum_abs a + sum_abs b.
Proof. induction a as [|p a IH]; intro b; simpl; [ring|rewrite IH; ring]. Qed.

Lemma sum_abs_nonneg : forall l, 0 <= sum_abs l.
Proof. induction l as [|p l IH]; simpl; [lra|]. pose proof (Rabs_pos (fst p * snd p)). lra. Qed.

Lemma sum_prod_le_abs : forall l, Rabs (sum_prod l) <= sum_abs l.
Proof.
  induction l as [|p l IH]; simpl; [rewrite Rabs_R0; lra|].
  eapply Rle_trans; [apply Rabs_triang|]. lra.
Qed.

Lemma sum_prod_perm : forall a b, Permutation a b -> sum_prod a = sum_prod b.
Proof. intros a b H. induction H; simpl; lra. Qed.

Lemma sum_abs_perm : forall a b, Permutation a b -> sum_abs a = sum_abs b.
Proof. intros a b H. induction H; simpl; lra. Qed.

Lemma eval_F : forall t, F (eval t).
Proof. destruct t; simpl; try apply F_rnd. apply F_0. Qed.

Lemma eval_no_terms : forall t, terms t = [] -> eval t = 0.
Proof.
  induction t as [| x y | x y s IH | l IHl r IHr]; simpl; intro H; try discriminate; [reflexivity|].
  apply app_eq_nil in H. destruct H as [Hl Hr].
  rewrite IHl, IHr by assumption. rewrite Rplus_0_r. apply rnd_0.
Qed.

Lemma depth_le_terms : forall t, (depth t <= length (terms t))%nat.
Proof.
  induction t as [| x y | x y s IH | l IHl r IHr]; simpl; try lia.
  rewrite app_length.
  destruct (terms l) as [|a la] eqn:El; destruct (terms r) as [|b lb] eqn:Er; simpl in *; lia.
Qed.

Lemma depth_pos : forall t, terms t <> [] -> (1 <= depth t)%nat.
Proof.
  induction t as [| x y | x y s IH | l IHl r IHr]; simpl; intro H; try lia; [congruence|].
  destruct (terms l) as [|a la] eqn:El; destruct (terms r) as [|b lb] eqn:Er; simpl in *; try lia.
  - congruence.
  - apply IHr. discriminate.
  - apply IHl. discriminate.
Qed.

(** The invariant behind B1, by induction over the tree: with d = depth t and m its number
    of products, |eval t - sum x_i y_i| <= gamma_d sum |x_i y_i| + (1 + gamma_d) m eta. *)
Theorem B1_dot_bound_depth :
  forall t, INR (depth t) * u < 1 ->
  Rabs (eval t - sum_prod (terms t)) <=
    gamma (depth t) * sum_abs (terms t) + (1 + gamma (depth t)) * INR (length (terms t)) * eta.
Proof.
  pose proof u_pos as Hu. pose proof eta_pos as Heta.
  induction t as [| x y | x y s IH | l IHl r IHr]; intro Hd.
  - simpl. rewrite gamma_0, Rminus_0_r, Rabs_R0. lra.
  - simpl depth in *. simpl eval. simpl terms. simpl sum_prod. simpl sum_abs. simpl length.
    rewrite !Rplus_0_r. simpl INR.
    assert (Hg : u <= gamma 1) by (apply u_le_gamma; [lia|exact Hd]).
    eapply Rle_trans; [apply rnd_abs_err|]. simpl fst; simpl snd.
    pose proof (Rabs_pos (x * y)). nra.
  - simpl depth in *. simpl eval. simpl terms. simpl sum_prod. simpl sum_abs. simpl length.
    assert (Hd' : INR (depth s) * u < 1) by (rewrite S_INR in Hd; lra).
    specialize (IH Hd').
    destruct (A1_standard_model (x * y + eval s)) as (d & e & Hdd & He & _ & Hr).
    rewrite Hr. simpl fst; simpl snd. rewrite S_INR.
    apply step_fma with (g := gamma (depth s)); try assumption.
    + apply gamma_nonneg. exact Hd'.
    + apply pos_INR.
    + apply sum_prod_le_abs.
    + apply gamma_step. exact Hd.
    + apply u_le_gamma; [lia|exact Hd].
  - simpl eval. simpl terms.
    rewrite sum_prod_app, sum_abs_app, app_length, plus_INR.
    simpl depth in Hd |- *.
    destruct (terms l) as [|a la] eqn:El.
    + (* +0 + r is exact *)
      rewrite (eval_no_terms l El), Rplus_0_l, rnd_F by apply eval_F.
      simpl sum_prod. simpl sum_abs. simpl length. simpl INR. rewrite !Rplus_0_l.
      exact (IHr Hd).
    + destruct (terms r) as [|b lb] eqn:Er.
      * rewrite (eval_no_terms r Er), Rplus_0_r, rnd_F by apply eval_F.
        simpl sum_prod. simpl sum_abs. simpl length. simpl INR. rewrite !Rplus_0_r.
        exact (IHl Hd).
      * set (dm := Nat.max (depth l) (depth r)) in *.
        assert (Hdm : INR dm * u < 1) by (rewrite S_INR in Hd; lra).
        assert (Hl : INR (depth l) * u < 1).
        { eapply Rle_lt_trans; [|exact Hdm]. apply Rmult_le_compat_r; [lra|]. apply le_INR. lia. }
        assert (Hr : INR (depth r) * u < 1).
        { eapply Rle_lt_trans; [|exact Hdm]. apply Rmult_le_compat_r; [lra|]. apply le_INR. lia. }
        destruct (A1_sum_exact_underflow (eval l) (eval r) (eval_F l) (eval_F r)) as (d & Hdd & Hrr).
        rewrite Hrr.
        eapply step_add with (gm := gamma dm).
        -- exact (IHl Hl).
        -- exact (IHr Hr).
        -- apply sum_prod_le_abs.
        -- apply sum_prod_le_abs.
        -- apply pos_INR.
        -- apply pos_INR.
        -- split; [apply gamma_nonneg; exact Hl|]. apply gamma_mono; [lia|exact Hdm].
        -- split; [apply gamma_nonneg; exact Hr|]. apply gamma_mono; [lia|exact Hdm].
        -- apply gamma_step. exact Hd.
        -- exact Hdd.
Qed.

(** B1 with gamma_n for any n at least the number of products (n u < 1). *)
Theorem B1_dot_bound_tree :
  forall t n, (length (terms t) <= n)%nat -> INR n * u < 1 ->
  Rabs (eval t - sum_prod (terms t)) <= gamma n * sum_abs (terms t) + (1 + gamma n) * INR n * eta.
Proof.
  intros t n Hn Hu1.
  pose proof u_pos. pose proof eta_pos.
  assert (Hd : (depth t <= n)%nat) by (pose proof (depth_le_terms t); lia).
  assert (Hdu : INR (depth t) * u < 1).
  { eapply Rle_lt_trans; [|exact Hu1]. apply Rmult_le_compat_r; [lra|]. now apply le_INR. }
  eapply Rle_trans; [exact (B1_dot_bound_depth t Hdu)|].
  pose proof (gamma_mono _ _ Hd Hu1). pose proof (gamma_nonneg _ Hdu).
  pose proof (sum_abs_nonneg (terms t)).
  apply le_INR in Hn. pose proof (pos_INR (length (terms t))).
  apply Rplus_le_compat; [apply Rmult_le_compat_r; lra|].
  apply Rmult_le_compat_r; [lra|]. apply Rmult_le_compat; lra.
Qed.

(** [B1], as spec/bounds.md states it: x, y of length n, any evaluation order of
    sum x_i y_i (any tree whose products are the pairs (x_i, y_i), each once), each product
    rounded or fused into an FMA, from +0 or from the first product:
    |fl(x.y) - x.y| <= gamma_n sum |x_i y_i| + (1 + gamma_n) n eta. *)
Theorem B1_dot_bound :
  forall (x y : list R) (t : dot_tree),
  length x = length y -> Permutation (terms t) (combine x y) -> INR (length x) * u < 1 ->
  Rabs (eval t - sum_prod (combine x y)) <=
    gamma (length x) * sum_abs (combine x y) + (1 + gamma (length x)) * INR (length x) * eta.
Proof.
  intros x y t Hxy Hp Hu1.
  rewrite <- (sum_prod_perm _ _ Hp), <- (sum_abs_perm _ _ Hp).
  apply B1_dot_bound_tree; [|exact Hu1].
  rewrite (Permutation_length Hp), combine_length, Hxy, Nat.min_id. lia.
Qed.

(** *** The split-K order (spec/kernels-cuda.md G2) *)

(** An FMA chain: s = fma(x_k, y_k, s) for each pair in order, from [acc]. *)
Fixpoint fma_chain (acc : dot_tree) (l : list (R * R)) : dot_tree :=
  match l with
  | [] => acc
  | (x, y) :: l' => fma_chain (DFma x y acc) l'
  end.

(** S chunks, each an FMA chain from +0; then s = p_0; s = s + p_c in chunk order. *)
Definition split_k (chunks : list (list (R * R))) : dot_tree :=
  match chunks with
  | [] => DZero
  | c0 :: cs => fold_left (fun s c => DAdd s (fma_chain DZero c)) cs (fma_chain DZero c0)
  end.

Lemma fma_chain_terms : forall l acc, Permutation (terms (fma_chain acc l)) (l ++ terms acc).
Proof.
  induction l as [|[x y] l IH]; intro acc; simpl; [apply Permutation_refl|].
  eapply Permutation_trans; [apply IH|]. simpl. apply Permutation_sym, Permutation_middle.
Qed.

Lemma fma_chain_depth : forall l acc, depth (fma_chain acc l) = (length l + depth acc)%nat.
Proof. induction l as [|[x y] l IH]; intro acc; simpl; [reflexivity|]. rewrite IH. simpl. lia. Qed.

Lemma fma_chain_nonempty : forall l acc, l <> [] -> terms (fma_chain acc l) <> [].
Proof.
  intros l acc Hl H. pose proof (Permutation_length (fma_chain_terms l acc)) as E.
  rewrite H in E. rewrite app_length in E. destruct l; [congruence|simpl in E; lia].
Qed.

Lemma split_k_fold :
  forall cs t L, (1 <= depth t)%nat -> terms t <> [] ->
  Forall (fun c => c <> [] /\ (length c <= L)%nat) cs ->
  Permutation (terms (fold_left (fun s c => DAdd s (fma_chain DZero c)) cs t)) (terms t ++ concat cs) /\
  (depth (fold_left (fun s c => DAdd s (fma_chain DZero c)) cs t) <= Nat.max (depth t) L + length cs)%nat /\
  terms (fold_left (fun s c => DAdd s (fma_chain DZero c)) cs t) <> [].
Proof.
  induction cs as [|c cs IH]; intros t L Hd Ht Hc; simpl.
  - rewrite app_nil_r. repeat split; [apply Permutation_refl|lia|exact Ht].
  - inversion Hc as [|? ? [Hne HL] Hcs]; subst.
    assert (Hct : terms (fma_chain DZero c) <> []) by now apply fma_chain_nonempty.
    assert (Hd' : (1 <= depth (DAdd t (fma_chain DZero c)))%nat).
    { simpl. destruct (terms t); [congruence|]. destruct (terms (fma_chain DZero c)); [congruence|]. lia. }
    assert (Ht' : terms (DAdd t (fma_chain DZero c)) <> []).
    { simpl. intro H. apply app_eq_nil in H. tauto. }
    destruct (IH _ L Hd' Ht' Hcs) as (Hp & Hdp & Hne').
    repeat split; [| |exact Hne'].
    + eapply Permutation_trans; [exact Hp|]. simpl. rewrite <- app_assoc.
      apply Permutation_app_head. apply Permutation_app_tail.
      eapply Permutation_trans; [apply fma_chain_terms|]. simpl. rewrite app_nil_r. apply Permutation_refl.
    + eapply Nat.le_trans; [exact Hdp|].
      simpl depth. destruct (terms t) as [|a la]; [congruence|].
      destruct (terms (fma_chain DZero c)) as [|b lb] eqn:E; [congruence|].
      rewrite fma_chain_depth. simpl depth. lia.
Qed.

(** [B1] for the split-K order: S >= 1 nonempty chunks of at most L products each: every
    product passes through at most L + S - 1 roundings, and the bound holds with
    gamma_{L+S-1}. *)
Theorem B1_split_k_depth :
  forall (chunks : list (list (R * R))) (L : nat),
  chunks <> [] -> Forall (fun c => c <> [] /\ (length c <= L)%nat) chunks ->
  Permutation (terms (split_k chunks)) (concat chunks) /\
  (depth (split_k chunks) <= L + length chunks - 1)%nat.
Proof.
  intros chunks L Hne Hc. destruct chunks as [|c0 cs]; [congruence|].
  inversion Hc as [|? ? [Hc0 HL0] Hcs]; subst. simpl split_k.
  assert (Hd0 : depth (fma_chain DZero c0) = length c0) by (rewrite fma_chain_depth; simpl; lia).
  assert (Hd1 : (1 <= depth (fma_chain DZero c0))%nat) by (rewrite Hd0; destruct c0; [congruence|simpl; lia]).
  destruct (split_k_fold cs (fma_chain DZero c0) L Hd1 (fma_chain_nonempty c0 DZero Hc0) Hcs) as (Hp & Hd & _).
  split.
  - eapply Permutation_trans; [exact Hp|]. simpl. apply Permutation_app_tail.
    eapply Permutation_trans; [apply fma_chain_terms|]. simpl. rewrite app_nil_r. apply Permutation_refl.
  - simpl length. rewrite Hd0 in Hd. lia.
Qed.

(** The count L + S - 1 <= n of spec/bounds.md: with the first chunk exactly L products and
    every other chunk nonempty, n = L + sum over the others of their sizes >= L + S - 1.
    (G2's shapes: S = 1 with L = n, or S >= 2 chunks of L but the last.) *)
Theorem B1_split_k_count :
  forall (chunks : list (list (R * R))) (L : nat),
  Forall (fun c => c <> []) chunks -> (exists c0 cs, chunks = c0 :: cs /\ length c0 = L) ->
  (L + length chunks - 1 <= length (concat chunks))%nat.
Proof.
  intros chunks L Hne (c0 & cs & -> & HL). simpl. rewrite app_length, HL.
  inversion Hne as [|? ? _ Hcs]; subst.
  assert (length cs <= length (concat cs))%nat.
  { clear -Hcs. induction cs as [|c cs IH]; simpl; [lia|].
    inversion Hcs; subst. rewrite app_length. destruct c; [congruence|simpl]. specialize (IH H2). lia. }
  lia.
Qed.

(** [B1] split-K corollary: the split-K order of n products, cut as G2 cuts it (S >= 1
    nonempty chunks, the first of exactly L, none longer), satisfies B1 with gamma_n (and
    with gamma_{L+S-1} <= gamma_n). *)
Theorem B1_split_k :
  forall (chunks : list (list (R * R))) (L : nat),
  chunks <> [] -> Forall (fun c => c <> [] /\ (length c <= L)%nat) chunks ->
  (exists c0 cs, chunks = c0 :: cs /\ length c0 = L) ->
  let n := length (concat chunks) in
  INR n * u < 1 ->
  (L + length chunks - 1 <= n)%nat /\
  Rabs (eval (split_k chunks) - sum_prod (concat chunks)) <=
    gamma (L + length chunks - 1) * sum_abs (concat chunks) + (1 + gamma (L + length chunks - 1)) * INR n * eta /\
  Rabs (eval (split_k chunks) - sum_prod (concat chunks)) <=
    gamma n * sum_abs (concat chunks) + (1 + gamma n) * INR n * eta.
Proof.
  intros chunks L Hne Hc Hfirst n Hu1.
  pose proof u_pos. pose proof eta_pos.
  destruct (B1_split_k_depth chunks L Hne Hc) as (Hp & Hd).
  assert (Hcount : (L + length chunks - 1 <= n)%nat).
  { apply B1_split_k_count; [|exact Hfirst]. eapply Forall_impl; [|exact Hc]. intros a [Ha _]; exact Ha. }
  assert (Hlen : length (terms (split_k chunks)) = n) by apply (Permutation_length Hp).
  set (k := (L + length chunks - 1)%nat) in *.
  assert (Hku : INR k * u < 1).
  { eapply Rle_lt_trans; [|exact Hu1]. apply Rmult_le_compat_r; [lra|]. now apply le_INR. }
  assert (Hdu : INR (depth (split_k chunks)) * u < 1).
  { eapply Rle_lt_trans; [|exact Hku]. apply Rmult_le_compat_r; [lra|]. now apply le_INR. }
  pose proof (B1_dot_bound_depth _ Hdu) as Hb.
  rewrite (sum_prod_perm _ _ Hp), (sum_abs_perm _ _ Hp), Hlen in Hb.
  pose proof (sum_abs_nonneg (concat chunks)). pose proof (pos_INR n).
  pose proof (gamma_mono _ _ Hd Hku). pose proof (gamma_nonneg _ Hdu).
  pose proof (gamma_mono _ _ Hcount Hu1).
  split; [exact Hcount|split].
  - eapply Rle_trans; [exact Hb|].
    apply Rplus_le_compat; [apply Rmult_le_compat_r; lra|].
    apply Rmult_le_compat_r; [lra|]. apply Rmult_le_compat_r; lra.
  - eapply Rle_trans; [exact Hb|].
    apply Rplus_le_compat; [apply Rmult_le_compat_r; lra|].
    apply Rmult_le_compat_r; [lra|]. apply Rmult_le_compat_r; lra.
Qed.

(** *** B1 on IEEE 754 binary32 itself *)

Section B1_binary32.
Import BinarySingleNaN.

(** The same trees over Flocq's IEEE binary32 (arithmetic.v [b32]), in round-to-nearest-even:
    Bmult for a product, Bfma for an FMA, Bplus for a sum, +0 to start from. *)
Inductive b32_tree : Type :=
| BZero : b32_tree
| BProd : b32 -> b32 -> b32_tree
| BFma : b32 -> b32 -> b32_tree -> b32_tree
| BAdd : b32_tree -> b32_tree -> b32_tree.

Fixpoint beval (t : b32_tree) : b32 :=
  match t with
  | BZero => B754_zero false
  | BProd x y => Bmult mode_NE x y
  | BFma x y s => Bfma mode_NE x y (beval s)
  | BAdd l r => Bplus mode_NE (beval l) (beval r)
  end.

(** No overflow, inputs finite: every node's result and every FMA's inputs are finite. *)
Fixpoint no_overflow (t : b32_tree) : Prop :=
  match t with
  | BZero => True
  | BProd x y => is_finite (Bmult mode_NE x y) = true
  | BFma x y s => is_finite x = true /\ is_finite y = true /\
                  is_finite (Bfma mode_NE x y (beval s)) = true /\ no_overflow s
  | BAdd l r => is_finite (Bplus mode_NE (beval l) (beval r)) = true /\ no_overflow l /\ no_overflow r
  end.

Fixpoint to_reals (t : b32_tree) : dot_tree :=
  match t with
  | BZero => DZero
  | BProd x y => DProd (B2R x) (B2R y)
  | BFma x y s => DFma (B2R x) (B2R y) (to_reals s)
  | BAdd l r => DAdd (to_reals l) (to_reals r)
  end.

Lemma beval_reals : forall t, no_overflow t -> is_finite (beval t) = true /\ B2R (beval t) = eval (to_reals t).
Proof.
  induction t as [| x y | x y s IH | l IHl r IHr]; simpl; intro H.
  - split; reflexivity.
  - split; [exact H|]. apply (A1_binary32_ops x y x). exact H.
  - destruct H as (Hx & Hy & Hf & Hs). destruct (IH Hs) as (Hsf & Hsv).
    split; [exact Hf|]. rewrite <- Hsv. apply (A1_binary32_ops x y (beval s)); assumption.
  - destruct H as (Hf & Hl & Hr). destruct (IHl Hl) as (Hlf & Hlv). destruct (IHr Hr) as (Hrf & Hrv).
    split; [exact Hf|]. rewrite <- Hlv, <- Hrv. apply (A1_binary32_ops (beval l) (beval r) (beval l)); assumption.
Qed.

(** [B1] on binary32: for x, y binary32 vectors of length n and any IEEE evaluation tree of
    their dot product that does not overflow, the bound of B1. *)
Theorem B1_dot_bound_binary32 :
  forall (x y : list b32) (t : b32_tree),
  length x = length y -> no_overflow t ->
  Permutation (terms (to_reals t)) (combine (map B2R x) (map B2R y)) ->
  INR (length x) * u < 1 ->
  is_finite (beval t) = true /\
  Rabs (B2R (beval t) - sum_prod (combine (map B2R x) (map B2R y))) <=
    gamma (length x) * sum_abs (combine (map B2R x) (map B2R y)) + (1 + gamma (length x)) * INR (length x) * eta.
Proof.
  intros x y t Hxy Hno Hp Hu1.
  destruct (beval_reals t Hno) as (Hf & Hv). split; [exact Hf|]. rewrite Hv.
  pose proof (B1_dot_bound (map B2R x) (map B2R y) (to_reals t)) as Hb.
  rewrite !map_length in Hb. apply Hb; assumption.
Qed.

End B1_binary32.

(** ** Relative factors: products of (1 + delta)^(+-1) (Higham, Lemma 3.1) *)

(** [rel m r]: r = 1 + theta with |theta| <= gamma_m. *)
Definition rel (m : nat) (r : R) : Prop := Rabs (r - 1) <= gamma m.

Lemma rel_delta : forall d, Rabs d <= u -> rel 1 (1 + d).
Proof.
  intros d Hd. unfold rel. replace (1 + d - 1) with d by ring.
  eapply Rle_trans; [exact Hd|]. apply u_le_gamma; [lia|]. simpl. pose proof u_small. pose proof u_pos. lra.
Qed.

Lemma rel_inv_delta : forall d, Rabs d <= u -> rel 1 (/ (1 + d)).
Proof.
  intros d Hd. unfold rel, gamma. simpl INR. rewrite Rmult_1_l.
  pose proof u_small. pose proof u_pos.
  assert (Hd' : - u <= d <= u) by (apply Rabs_le_inv; exact Hd).
  replace (/ (1 + d) - 1) with (- d / (1 + d)) by (field; lra).
  unfold Rdiv. rewrite Rabs_mult, Rabs_Ropp, Rabs_inv, (Rabs_pos_eq (1 + d)) by lra.
  apply Rmult_le_compat; [apply Rabs_pos|apply Rlt_le, Rinv_0_lt_compat; lra|exact Hd|].
  apply Rinv_le_contravar; lra.
Qed.

Lemma rel_one : rel 0 1.
Proof. unfold rel. rewrite gamma_0, Rminus_diag_eq, Rabs_R0 by reflexivity. lra. Qed.

Lemma rel_mul : forall j k a b, rel j a -> rel k b -> INR (j + k) * u < 1 -> rel (j + k) (a * b).
Proof.
  intros j k a b Ha Hb H. unfold rel in *.
  pose proof (gamma_mul j k H) as Hm.
  pose proof (pos_INR j). pose proof (pos_INR k). pose proof u_pos. rewrite plus_INR in H.
  assert (Hj : INR j * u < 1) by nra. assert (Hk : INR k * u < 1) by nra.
  pose proof (gamma_nonneg j Hj). pose proof (gamma_nonneg k Hk).
  replace (a * b - 1) with ((a - 1) * (b - 1) + (a - 1) + (b - 1)) by ring.
  eapply Rle_trans; [apply Rabs_triang|]. eapply Rle_trans; [apply Rplus_le_compat_r, Rabs_triang|].
  rewrite Rabs_mult.
  assert (Rabs (a - 1) * Rabs (b - 1) <= gamma j * gamma k) by (apply Rmult_le_compat; try apply Rabs_pos; assumption).
  nra.
Qed.

Lemma rel_mono : forall j k a, (j <= k)%nat -> INR k * u < 1 -> rel j a -> rel k a.
Proof. intros j k a Hjk Hk Ha. unfold rel in *. eapply Rle_trans; [exact Ha|]. now apply gamma_mono. Qed.

Lemma rel_bounds : forall m r, rel m r -> Rabs r <= 1 + gamma m.
Proof.
  intros m r H. unfold rel in H. replace r with ((r - 1) + 1) by ring.
  eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_R1. lra.
Qed.

(** A value within B1's form of D, scaled by a relative factor of m roundings. *)
Lemma rel_prop : forall m d Dh D A c r,
  rel m r -> Rabs D <= A -> 0 <= c -> INR (d + m) * u < 1 ->
  Rabs (Dh - D) <= gamma d * A + (1 + gamma d) * c * eta ->
  Rabs (Dh * r - D) <= gamma (d + m) * A + (1 + gamma (d + m)) * c * eta.
Proof.
  intros m d Dh D A c r Hr HD Hc Hu Hdot.
  pose proof u_pos. pose proof eta_pos. pose proof (pos_INR d). pose proof (pos_INR m).
  assert (Hd : INR d * u < 1) by (rewrite plus_INR in Hu; nra).
  assert (Hm : INR m * u < 1) by (rewrite plus_INR in Hu; nra).
  pose proof (gamma_nonneg d Hd). pose proof (gamma_nonneg m Hm).
  assert (Hmul : (1 + gamma d) * (1 + gamma m) <= 1 + gamma (d + m)) by (apply gamma_mul; exact Hu).
  assert (HA : 0 <= A) by (eapply Rle_trans; [apply Rabs_pos|exact HD]).
  unfold rel in Hr.
  replace (Dh * r - D) with ((Dh - D) * r + D * (r - 1)) by ring.
  eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult.
  pose proof (rel_bounds m r Hr) as Hrb.
  assert (K1 : Rabs (Dh - D) * Rabs r <= (gamma d * A + (1 + gamma d) * c * eta) * (1 + gamma m))
    by (apply Rmult_le_compat; try apply Rabs_pos; assumption).
  assert (K2 : Rabs D * Rabs (r - 1) <= A * gamma m) by (apply Rmult_le_compat; try apply Rabs_pos; assumption).
  assert (K3 : (1 + gamma d) * c * eta * (1 + gamma m) <= (1 + gamma (d + m)) * c * eta).
  { replace ((1 + gamma d) * c * eta * (1 + gamma m)) with ((1 + gamma d) * (1 + gamma m) * (c * eta)) by ring.
    replace ((1 + gamma (d + m)) * c * eta) with ((1 + gamma (d + m)) * (c * eta)) by ring.
    apply Rmult_le_compat_r; [nra|exact Hmul]. }
  assert (K4 : gamma d * A * (1 + gamma m) + A * gamma m <= gamma (d + m) * A).
  { replace (gamma d * A * (1 + gamma m) + A * gamma m) with (((1 + gamma d) * (1 + gamma m) - 1) * A) by ring.
    apply Rmult_le_compat_r; lra. }
  lra.
Qed.

(** ** [B3] RoPE rotation *)

(** The rotation's two outputs are dot products of length 2; a subtraction of two rounded
    products is such a tree (rounding is odd), and so is an FMA over a rounded product. *)
Lemma B3_forms_are_trees : forall x0 x1 c s,
  rnd (rnd (x0 * c) - rnd (x1 * s)) = eval (DAdd (DProd x0 c) (DProd (- x1) s)) /\
  rnd (x0 * c - rnd (x1 * s)) = eval (DFma x0 c (DProd (- x1) s)) /\
  rnd (- x1 * s + rnd (x0 * c)) = eval (DFma (- x1) s (DProd x0 c)) /\
  rnd (rnd (x0 * s) + rnd (x1 * c)) = eval (DAdd (DProd x0 s) (DProd x1 c)).
Proof.
  intros. simpl. unfold Rminus.
  replace (- x1 * s) with (- (x1 * s)) by ring. rewrite !rnd_opp. repeat split; reflexivity.
Qed.

(** [B3]: each output of the rotation with table values c, s, in any tree of its two
    products (two products and a sum, or an FMA):
    gamma_2 (|x0 c| + |x1 s|) + 2 (1 + gamma_2) eta. *)
Theorem B3_rope_bound : forall x0 x1 c s t,
  (Permutation (terms t) [(x0, c); (- x1, s)] ->
     Rabs (eval t - (x0 * c - x1 * s)) <= gamma 2 * (Rabs (x0 * c) + Rabs (x1 * s)) + (1 + gamma 2) * 2 * eta) /\
  (Permutation (terms t) [(x0, s); (x1, c)] ->
     Rabs (eval t - (x0 * s + x1 * c)) <= gamma 2 * (Rabs (x0 * s) + Rabs (x1 * c)) + (1 + gamma 2) * 2 * eta).
Proof.
  intros x0 x1 c s t.
  assert (H2 : INR 2 * u < 1) by (pose proof u_small; pose proof u_pos; simpl; lra).
  split; intro Hp.
  - pose proof (B1_dot_bound [x0; - x1] [c; s] t eq_refl Hp H2) as H. simpl in H.
    replace (- x1 * s) with (- (x1 * s)) in H by ring. rewrite Rabs_Ropp in H.
    replace (x0 * c + (- (x1 * s) + 0)) with (x0 * c - x1 * s) in H by ring.
    replace (Rabs (x0 * c) + (Rabs (x1 * s) + 0)) with (Rabs (x0 * c) + Rabs (x1 * s)) in H by ring.
    replace (1 + 1) with 2 in H by ring. exact H.
  - pose proof (B1_dot_bound [x0; x1] [s; c] t eq_refl Hp H2) as H. simpl in H.
    replace (x0 * s + (x1 * c + 0)) with (x0 * s + x1 * c) in H by ring.
    replace (Rabs (x0 * s) + (Rabs (x1 * c) + 0)) with (Rabs (x0 * s) + Rabs (x1 * c)) in H by ring.
    replace (1 + 1) with 2 in H by ring. exact H.
Qed.

(** ** [B7] Weighted sum of values *)

(** [B7]: out_i = sum_p a_p v_{p,i} in any order is B1 over the probabilities a and the
    value column v (n_pos terms). *)
Theorem B7_weighted_sum_bound :
  forall (a v : list R) (t : dot_tree),
  length a = length v -> Permutation (terms t) (combine a v) -> INR (length a) * u < 1 ->
  Rabs (eval t - sum_prod (combine a v)) <=
    gamma (length a) * sum_abs (combine a v) + (1 + gamma (length a)) * INR (length a) * eta.
Proof. intros. now apply B1_dot_bound. Qed.

(** ** [B10] The cross-backend contract *)

(** [B10]: two results within B and B' of the same exact value are within B + B' of each other
    (2B for one bound shared by every conforming order). *)
Theorem B10_cross_backend : forall ref opt exact B B',
  Rabs (ref - exact) <= B -> Rabs (opt - exact) <= B' -> Rabs (ref - opt) <= B + B'.
Proof.
  intros ref opt exact B B' H1 H2.
  replace (ref - opt) with ((ref - exact) - (opt - exact)) by ring.
  eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_Ropp. lra.
Qed.

(** ** [B9] Logits *)

(** One term j of logit row i: the weight W_ij, the backend's normed value y'_j (what its
    matmul multiplies), the reference's normed value yr_j, the exact y_j, and the B2 bound b_j. *)
Record logit_term := mk_lt { lw : R; lyb : R; lyr : R; lye : R; lb : R }.

Definition lsum (f : logit_term -> R) (l : list logit_term) : R := fold_right (fun x s => f x + s) 0 l.

Lemma lsum_le : forall f g l, (forall x, In x l -> f x <= g x) -> lsum f l <= lsum g l.
Proof.
  intros f g l H. induction l as [|x l IH]; simpl; [lra|].
  apply Rplus_le_compat; [apply H; now left|apply IH; intros y Hy; apply H; now right].
Qed.

Lemma lsum_abs : forall f l, Rabs (lsum f l) <= lsum (fun x => Rabs (f x)) l.
Proof.
  intros f l. induction l as [|x l IH]; simpl; [rewrite Rabs_R0; lra|].
  eapply Rle_trans; [apply Rabs_triang|]. lra.
Qed.

Lemma lsum_minus : forall f g l, lsum f l - lsum g l = lsum (fun x => f x - g x) l.
Proof. intros f g l. induction l as [|x l IH]; simpl; [ring|]. rewrite <- IH. ring. Qed.

Lemma sum_prod_lsum : forall l, sum_prod (map (fun x => (lw x, lyb x)) l) = lsum (fun x => lw x * lyb x) l.
Proof. induction l as [|x l IH]; simpl; [reflexivity|]. now rewrite IH. Qed.

Lemma sum_abs_lsum : forall l, sum_abs (map (fun x => (lw x, lyb x)) l) = lsum (fun x => Rabs (lw x * lyb x)) l.
Proof. induction l as [|x l IH]; simpl; [reflexivity|]. now rewrite IH. Qed.

(** [B9]: if the backend's normed vector and the reference's are both within b_j (B2) of the
    exact normed vector, the backend's logit (B1 at its own y', any order) is within
    gamma_n sum_j |W_ij| (|yr_j| + 2 b_j) + (1 + gamma_n) n eta + sum_j |W_ij| b_j of the exact
    logit sum_j W_ij y_j. *)
Theorem B9_logits_bound :
  forall (l : list logit_term) (t : dot_tree),
  Forall (fun x => Rabs (lyb x - lye x) <= lb x /\ Rabs (lyr x - lye x) <= lb x) l ->
  Permutation (terms t) (map (fun x => (lw x, lyb x)) l) ->
  INR (length l) * u < 1 ->
  Rabs (eval t - lsum (fun x => lw x * lye x) l) <=
    gamma (length l) * lsum (fun x => Rabs (lw x) * (Rabs (lyr x) + 2 * lb x)) l +
    (1 + gamma (length l)) * INR (length l) * eta + lsum (fun x => Rabs (lw x) * lb x) l.
Proof.
  intros l t Hf Hp Hu.
  assert (Hlen : (length (terms t) <= length l)%nat) by (rewrite (Permutation_length Hp), map_length; lia).
  pose proof (B1_dot_bound_tree t (length l) Hlen Hu) as H.
  rewrite (sum_prod_perm _ _ Hp), (sum_abs_perm _ _ Hp), sum_prod_lsum, sum_abs_lsum in H.
  assert (Hg : 0 <= gamma (length l)) by (apply gamma_nonneg; exact Hu).
  assert (Habs : lsum (fun x => Rabs (lw x * lyb x)) l <= lsum (fun x => Rabs (lw x) * (Rabs (lyr x) + 2 * lb x)) l).
  { apply lsum_le. intros x Hx. rewrite Forall_forall in Hf. destruct (Hf x Hx) as (H1 & H2).
    rewrite Rabs_mult. apply Rmult_le_compat_l; [apply Rabs_pos|].
    replace (lyb x) with ((lyb x - lye x) + (lye x - lyr x) + lyr x) by ring.
    eapply Rle_trans; [apply Rabs_triang|]. eapply Rle_trans; [apply Rplus_le_compat_r, Rabs_triang|].
    rewrite <- Rabs_Ropp, Ropp_minus_distr in H2. lra. }
  assert (Hprop : Rabs (lsum (fun x => lw x * lyb x) l - lsum (fun x => lw x * lye x) l) <= lsum (fun x => Rabs (lw x) * lb x) l).
  { rewrite lsum_minus. eapply Rle_trans; [apply lsum_abs|]. apply lsum_le. intros x Hx.
    rewrite Forall_forall in Hf. destruct (Hf x Hx) as (H1 & _).
    replace (lw x * lyb x - lw x * lye x) with (lw x * (lyb x - lye x)) by ring.
    rewrite Rabs_mult. apply Rmult_le_compat_l; [apply Rabs_pos|exact H1]. }
  replace (eval t - lsum (fun x => lw x * lye x) l) with
    ((eval t - lsum (fun x => lw x * lyb x) l) + (lsum (fun x => lw x * lyb x) l - lsum (fun x => lw x * lye x) l)) by ring.
  eapply Rle_trans; [apply Rabs_triang|].
  assert (gamma (length l) * lsum (fun x => Rabs (lw x * lyb x)) l <=
          gamma (length l) * lsum (fun x => Rabs (lw x) * (Rabs (lyr x) + 2 * lb x)) l)
    by (apply Rmult_le_compat_l; assumption).
  lra.
Qed.

(** ** [B4] Attention score q.k / sqrt d *)

Definition sum_abs_snd (l : list (R * R)) : R := fold_right (fun p s => Rabs (snd p) + s) 0 l.

Lemma sum_abs_snd_nonneg : forall l, 0 <= sum_abs_snd l.
Proof. induction l as [|p l IH]; simpl; [lra|]. pose proof (Rabs_pos (snd p)). lra. Qed.

(** The scale: fl(sqrt d) and fl(1 / fl(sqrt d)) are normal (1 <= d < 2^24): relative
    errors only. *)
Lemma scale_model : forall d, (1 <= d)%nat -> INR d * u < 1 ->
  let sd := rnd (sqrt (INR d)) in
  1 <= sqrt (INR d) /\
  exists d1 d2, Rabs d1 <= u /\ Rabs d2 <= u /\ sd = sqrt (INR d) * (1 + d1) /\ rnd (1 / sd) = 1 / sd * (1 + d2).
Proof.
  intros d Hd Hu sd.
  pose proof u_small. pose proof u_pos.
  assert (H1 : 1 <= INR d) by (apply (le_INR 1); exact Hd).
  assert (Hsq1 : 1 <= sqrt (INR d)) by (rewrite <- sqrt_1; apply sqrt_le_1_alt; lra).
  assert (Hsq : sqrt (INR d) <= 4096).
  { replace 4096 with (sqrt (4096 * 4096)) by (rewrite sqrt_square; lra).
    apply sqrt_le_1_alt. rewrite u_val in Hu. apply Rmult_lt_compat_r with (r := 16777216) in Hu; [|lra].
    rewrite Rmult_assoc, Rinv_l in Hu by lra. lra. }
  assert (Hb : bpow radix2 (-126) <= 1) by (simpl; lra).
  destruct (A1_normal_relative (sqrt (INR d))) as (d1 & Hd1 & Hr1).
  { rewrite Rabs_pos_eq by lra. lra. }
  assert (Hsd : sd = sqrt (INR d) * (1 + d1)) by exact Hr1.
  assert (Hd1' : - u <= d1 <= u) by (apply Rabs_le_inv; exact Hd1).
  assert (Hsdpos : 0 < sd) by (rewrite Hsd; nra).
  assert (Hsdle : sd <= 8192) by (rewrite Hsd; nra).
  destruct (A1_normal_relative (1 / sd)) as (d2 & Hd2 & Hr2).
  { rewrite Rabs_pos_eq by (unfold Rdiv; rewrite Rmult_1_l; apply Rlt_le, Rinv_0_lt_compat; lra).
    simpl. unfold Rdiv. rewrite Rmult_1_l. apply Rle_trans with (/ 8192); [lra|].
    apply Rinv_le_contravar; lra. }
  split; [exact Hsq1|]. exists d1, d2. repeat split; assumption.
Qed.

(** q pre-scaled by c: each term fl(q_i c) k_i is q_i k_i rho_i / sqrt d + e_i k_i. *)
Lemma prescale_terms : forall (l : list (R * R)) c sq,
  0 < sq -> (forall d3, Rabs d3 <= u -> rel 3 (c * sq * (1 + d3))) ->
  Rabs (sum_prod (map (fun p => (rnd (fst p * c), snd p)) l) - sum_prod l / sq) <=
    gamma 3 * sum_abs l / sq + eta * sum_abs_snd l /\
  sum_abs (map (fun p => (rnd (fst p * c), snd p)) l) <= (1 + gamma 3) * sum_abs l / sq + eta * sum_abs_snd l.
Proof.
  intros l c sq Hsq Hrel. pose proof eta_pos.
  induction l as [|[q k] l IH]; simpl.
  - unfold Rdiv. rewrite Rmult_0_l, Rminus_0_r, Rabs_R0, !Rmult_0_r, Rmult_0_l, Rplus_0_r. lra.
  - destruct IH as (IH1 & IH2).
    destruct (A1_standard_model (q * c)) as (d3 & e3 & Hd3 & He3 & _ & Hr). rewrite Hr.
    specialize (Hrel d3 Hd3). pose proof (rel_bounds 3 _ Hrel) as Hrb. unfold rel in Hrel.
    set (rho := c * sq * (1 + d3)) in *.
    assert (Ht : (q * c * (1 + d3) + e3) * k = q * k * rho / sq + e3 * k) by (unfold rho; field; lra).
    rewrite Ht.
    assert (Hinv : 0 < / sq) by (apply Rinv_0_lt_compat; lra).
    assert (Hek : Rabs (e3 * k) <= eta * Rabs k) by (rewrite Rabs_mult; apply Rmult_le_compat_r; [apply Rabs_pos|exact He3]).
    split.
    + replace (q * k * rho / sq + e3 * k + sum_prod (map (fun p => (rnd (fst p * c), snd p)) l) - (q * k + sum_prod l) / sq)
        with ((q * k) * (rho - 1) * / sq + e3 * k + (sum_prod (map (fun p => (rnd (fst p * c), snd p)) l) - sum_prod l / sq))
        by (field; lra).
      eapply Rle_trans; [apply Rabs_triang|]. eapply Rle_trans; [apply Rplus_le_compat_r, Rabs_triang|].
      rewrite !Rabs_mult, (Rabs_pos_eq (/ sq)) by lra.
      assert (Rabs (q * k) * Rabs (rho - 1) * / sq <= Rabs (q * k) * gamma 3 * / sq).
      { apply Rmult_le_compat_r; [lra|]. apply Rmult_le_compat_l; [apply Rabs_pos|exact Hrel]. }
      unfold Rdiv in *. simpl fst in *. simpl snd in *. rewrite Rabs_mult in Hek, H0.
      replace (gamma 3 * (Rabs q * Rabs k + sum_abs l) * / sq + eta * (Rabs k + sum_abs_snd l)) with
        (gamma 3 * (Rabs q * Rabs k) * / sq + eta * Rabs k + (gamma 3 * sum_abs l * / sq + eta * sum_abs_snd l)) by ring.
      lra.
    + assert (T1 : Rabs (q * k * rho / sq + e3 * k) <= (1 + gamma 3) * (Rabs q * Rabs k) * / sq + eta * Rabs k).
      { eapply Rle_trans; [apply Rabs_triang|]. apply Rplus_le_compat; [|exact Hek].
        unfold Rdiv. rewrite !Rabs_mult, (Rabs_pos_eq (/ sq)) by lra.
        apply Rmult_le_compat_r; [lra|].
        replace ((1 + gamma 3) * (Rabs q * Rabs k)) with (Rabs q * Rabs k * (1 + gamma 3)) by ring.
        apply Rmult_le_compat_l; [apply Rmult_le_pos; apply Rabs_pos|exact Hrb]. }
      simpl fst. simpl snd. unfold Rdiv in *. rewrite Rabs_mult.
      replace ((1 + gamma 3) * (Rabs q * Rabs k + sum_abs l) * / sq + eta * (Rabs k + sum_abs_snd l)) with
        ((1 + gamma 3) * (Rabs q * Rabs k) * / sq + eta * Rabs k + ((1 + gamma 3) * sum_abs l * / sq + eta * sum_abs_snd l)) by ring.
      lra.
Qed.

(** The B4 bound. *)
Definition score_bound (qk : list (R * R)) : R :=
  let d := length qk in
  gamma (d + 3) * sum_abs qk / sqrt (INR d) +
  (1 + gamma (d + 3)) * (2 * INR d + 1 + (1 + u) * sum_abs_snd qk) * eta.

(** The rounded result of D^ times a relative factor of 3 roundings over sqrt d, plus one
    absolute error: within the B4 bound. *)
Lemma score_finish : forall qk t rho e,
  let d := length qk in
  (1 <= d)%nat -> INR (d + 3) * u < 1 -> Permutation (terms t) qk ->
  rel 3 rho -> Rabs e <= eta ->
  Rabs (eval t * rho / sqrt (INR d) + e - sum_prod qk / sqrt (INR d)) <= score_bound qk.
Proof.
  intros qk t rho e d Hd Hu Hp Hr He.
  pose proof u_pos. pose proof eta_pos.
  assert (Hdu : INR d * u < 1) by (rewrite plus_INR in Hu; pose proof (pos_INR 3); nra).
  assert (Hlen : (length (terms t) <= d)%nat) by (rewrite (Permutation_length Hp); lia).
  pose proof (B1_dot_bound_tree t d Hlen Hdu) as Hdot.
  rewrite (sum_prod_perm _ _ Hp), (sum_abs_perm _ _ Hp) in Hdot.
  pose proof (rel_prop 3 d (eval t) (sum_prod qk) (sum_abs qk) (INR d) rho Hr (sum_prod_le_abs qk) (pos_INR d) Hu Hdot) as Hrp.
  assert (H1 : 1 <= INR d) by (apply (le_INR 1); exact Hd).
  assert (Hsq1 : 1 <= sqrt (INR d)) by (rewrite <- sqrt_1; apply sqrt_le_1_alt; lra).
  pose proof (gamma_nonneg (d + 3) Hu). pose proof (sum_abs_nonneg qk). pose proof (sum_abs_snd_nonneg qk).
  replace (eval t * rho / sqrt (INR d) + e - sum_prod qk / sqrt (INR d))
    with ((eval t * rho - sum_prod qk) / sqrt (INR d) + e) by (field; lra).
  eapply Rle_trans; [apply Rabs_triang|].
  unfold Rdiv. rewrite Rabs_mult, (Rabs_pos_eq (/ sqrt (INR d))) by (apply Rlt_le, Rinv_0_lt_compat; lra).
  unfold score_bound. fold d.
  assert (Hinv : / sqrt (INR d) <= 1) by (rewrite <- Rinv_1; apply Rinv_le_contravar; lra).
  assert (Hinv0 : 0 < / sqrt (INR d)) by (apply Rinv_0_lt_compat; lra).
  assert (K1 : Rabs (eval t * rho - sum_prod qk) * / sqrt (INR d) <=
               gamma (d + 3) * sum_abs qk * / sqrt (INR d) + (1 + gamma (d + 3)) * INR d * eta * / sqrt (INR d)).
  { rewrite <- Rmult_plus_distr_r. apply Rmult_le_compat_r; lra. }
  assert (K2 : (1 + gamma (d + 3)) * INR d * eta * / sqrt (INR d) <= (1 + gamma (d + 3)) * INR d * eta).
  { rewrite <- (Rmult_1_r ((1 + gamma (d + 3)) * INR d * eta)) at 2. apply Rmult_le_compat_l; [|exact Hinv].
    apply Rmult_le_pos; [|lra]. apply Rmult_le_pos; [lra|]. apply pos_INR. }
  assert (K3 : (1 + u) * sum_abs_snd qk * eta >= 0) by (apply Rle_ge; apply Rmult_le_pos; [|lra]; apply Rmult_le_pos; lra).
  assert (K4 : (1 + gamma (d + 3)) * (2 * INR d + 1 + (1 + u) * sum_abs_snd qk) * eta >=
               (1 + gamma (d + 3)) * INR d * eta + eta).
  { assert (0 <= (1 + gamma (d + 3)) * ((INR d + (1 + u) * sum_abs_snd qk) * eta) + gamma (d + 3) * eta)
      by (apply Rplus_le_le_0_compat; apply Rmult_le_pos; try lra; apply Rmult_le_pos; try lra;
          apply Rplus_le_le_0_compat; [apply pos_INR|apply Rmult_le_pos; lra]).
    nra. }
  lra.
Qed.

(** [B4], for each of the three scale paths the clause names, with any tree for the dot:
    (a) the reference, fl(fl(q.k) * fl(1 / fl(sqrt d)));
    (b) fl(fl(q.k) / fl(sqrt d));
    (c) q pre-scaled, fl(q_i * fl(1 / fl(sqrt d))), then the dot in any tree:
    |s^ - q.k / sqrt d| <= gamma_{d+3} sum |q_i k_i| / sqrt d
                           + (1 + gamma_{d+3}) (2d + 1 + (1 + u) sum |k_i|) eta. *)
Theorem B4_score_bound :
  forall (qk : list (R * R)) (t : dot_tree),
  let d := length qk in
  (1 <= d)%nat -> INR (d + 3) * u < 1 ->
  let sd := rnd (sqrt (INR d)) in
  let c := rnd (1 / sd) in
  (Permutation (terms t) qk -> Rabs (rnd (eval t * c) - sum_prod qk / sqrt (INR d)) <= score_bound qk) /\
  (Permutation (terms t) qk -> Rabs (rnd (eval t / sd) - sum_prod qk / sqrt (INR d)) <= score_bound qk) /\
  (Permutation (terms t) (map (fun p => (rnd (fst p * c), snd p)) qk) ->
     Rabs (eval t - sum_prod qk / sqrt (INR d)) <= score_bound qk).
Proof.
  intros qk t d Hd Hu sd c.
  pose proof u_pos. pose proof eta_pos. pose proof u_small.
  assert (Hdu : INR d * u < 1) by (rewrite plus_INR in Hu; pose proof (pos_INR 3); nra).
  assert (H3 : INR 3 * u < 1) by (simpl; lra).
  destruct (scale_model d Hd Hdu) as (Hsq & d1 & d2 & Hd1 & Hd2 & Hsd & Hc). fold sd in Hsd, Hc. fold c in Hc.
  assert (Hd1' : - u <= d1 <= u) by (apply Rabs_le_inv; exact Hd1).
  assert (Hsdne : sd <> 0) by (rewrite Hsd; nra).
  assert (Hd1ne : 1 + d1 <> 0) by lra.
  (* c sqrt d = (1 + d2) / (1 + d1): two roundings *)
  assert (Hcr : forall d3, Rabs d3 <= u -> rel 3 (c * sqrt (INR d) * (1 + d3))).
  { intros d3 Hd3. rewrite Hc, Hsd.
    replace (1 / (sqrt (INR d) * (1 + d1)) * (1 + d2) * sqrt (INR d) * (1 + d3))
      with (/ (1 + d1) * (1 + d2) * (1 + d3)) by (field; lra).
    apply (rel_mul 2 1); [|now apply rel_delta|exact H3].
    apply (rel_mul 1 1); [now apply rel_inv_delta|now apply rel_delta|simpl; lra]. }
  split; [|split].
  - intro Hp. destruct (A1_standard_model (eval t * c)) as (d3 & e3 & Hd3 & He3 & _ & Hr).
    rewrite Hr.
    replace (eval t * c * (1 + d3) + e3) with (eval t * (c * sqrt (INR d) * (1 + d3)) / sqrt (INR d) + e3)
      by (field; lra).
    apply score_finish; try assumption. now apply Hcr.
  - intro Hp. destruct (A1_standard_model (eval t / sd)) as (d3 & e3 & Hd3 & He3 & _ & Hr).
    rewrite Hr, Hsd.
    replace (eval t / (sqrt (INR d) * (1 + d1)) * (1 + d3) + e3)
      with (eval t * (/ (1 + d1) * (1 + d3)) / sqrt (INR d) + e3) by (field; lra).
    apply score_finish; try assumption.
    apply (rel_mono 2 3); [lia|exact H3|].
    apply (rel_mul 1 1); [now apply rel_inv_delta|now apply rel_delta|simpl; lra].
  - intro Hp.
    set (qk' := map (fun p => (rnd (fst p * c), snd p)) qk) in *.
    assert (Hsq0 : 0 < sqrt (INR d)) by lra.
    assert (Hcr' : forall d3, Rabs d3 <= u -> rel 3 (c * sqrt (INR d) * (1 + d3))) by exact Hcr.
    destruct (prescale_terms qk c (sqrt (INR d)) Hsq0 Hcr') as (Ht1 & Ht2). fold qk' in Ht1, Ht2.
    assert (Hlen : (length (terms t) <= d)%nat) by (rewrite (Permutation_length Hp); unfold qk'; rewrite map_length; lia).
    pose proof (B1_dot_bound_tree t d Hlen Hdu) as Hdot.
    rewrite (sum_prod_perm _ _ Hp), (sum_abs_perm _ _ Hp) in Hdot.
    pose proof (gamma_nonneg d Hdu) as Hgd. pose proof (gamma_nonneg 3 H3) as Hg3.
    pose proof (gamma_mul d 3 Hu) as Hgm.
    pose proof (sum_abs_nonneg qk) as HA. pose proof (sum_abs_snd_nonneg qk) as HK.
    set (A := sum_abs qk) in *. set (K := sum_abs_snd qk) in *.
    assert (HAq : 0 <= A / sqrt (INR d)) by (unfold Rdiv; apply Rmult_le_pos; [lra|apply Rlt_le, Rinv_0_lt_compat; lra]).
    replace (eval t - sum_prod qk / sqrt (INR d)) with ((eval t - sum_prod qk') + (sum_prod qk' - sum_prod qk / sqrt (INR d))) by ring.
    eapply Rle_trans; [apply Rabs_triang|].
    assert (K1 : gamma d * sum_abs qk' <= gamma d * ((1 + gamma 3) * A / sqrt (INR d) + eta * K))
      by (apply Rmult_le_compat_l; assumption).
    unfold score_bound. fold d. fold A. fold K.
    assert (K2 : ((1 + gamma d) * (1 + gamma 3) - 1) * (A / sqrt (INR d)) <= gamma (d + 3) * (A / sqrt (INR d)))
      by (apply Rmult_le_compat_r; lra).
    assert (K3 : (1 + gamma d) * (INR d + K) * eta <= (1 + gamma (d + 3)) * (2 * INR d + 1 + (1 + u) * K) * eta).
    { apply Rmult_le_compat_r; [lra|]. pose proof (pos_INR d).
      assert (gamma d <= gamma (d + 3)) by (apply gamma_mono; [lia|exact Hu]).
      assert (0 <= u * K) by (apply Rmult_le_pos; lra).
      apply Rmult_le_compat; lra. }
    unfold Rdiv in *. lra.
Qed.

(** ** [B2] Sum of squares and RMSNorm *)

Lemma three_factors : forall a b c A,
  Rabs (a - 1) <= A -> Rabs (b - 1) <= u -> Rabs (c - 1) <= u ->
  Rabs (a * b * c - 1) <= (1 + A) * (1 + u) * (1 + u) - 1.
Proof.
  intros a b c A Ha Hb Hc. pose proof u_pos.
  assert (HA : 0 <= A) by (eapply Rle_trans; [apply Rabs_pos|exact Ha]).
  replace (a * b * c - 1) with ((a - 1) * b * c + (b - 1) * c + (c - 1)) by ring.
  assert (Hb' : Rabs b <= 1 + u) by (replace b with ((b - 1) + 1) by ring; eapply Rle_trans; [apply Rabs_triang|]; rewrite Rabs_R1; lra).
  assert (Hc' : Rabs c <= 1 + u) by (replace c with ((c - 1) + 1) by ring; eapply Rle_trans; [apply Rabs_triang|]; rewrite Rabs_R1; lra).
  eapply Rle_trans; [apply Rabs_triang|]. eapply Rle_trans; [apply Rplus_le_compat_r, Rabs_triang|].
  rewrite !Rabs_mult.
  assert (K1 : Rabs (a - 1) * Rabs b * Rabs c <= A * (1 + u) * (1 + u))
    by (apply Rmult_le_compat; try apply Rmult_le_pos; try apply Rabs_pos; try lra;
        apply Rmult_le_compat; try apply Rabs_pos; lra).
  assert (K2 : Rabs (b - 1) * Rabs c <= u * (1 + u)) by (apply Rmult_le_compat; try apply Rabs_pos; lra).
  nra.
Qed.

Definition sq_terms (x : list R) : list (R * R) := map (fun a => (a, a)) x.

Lemma sq_abs : forall x, sum_abs (sq_terms x) = sum_prod (sq_terms x).
Proof.
  induction x as [|a x IH]; simpl; [reflexivity|]. rewrite IH.
  rewrite Rabs_pos_eq; [reflexivity|]. apply Rle_0_sqr.
Qed.

(** The relative error bounds of B2, as the clause and rmsnorm_bounds state them. *)
Definition rms_eps_m (n : nat) (m : R) : R := gamma (n + 2) + 4 * eta / m.
Definition rms_eps_r (em : R) : R := (1 + u) / ((1 - u) * sqrt (1 - em)) - 1.
Definition rms_rel (er : R) : R := (1 + er) * (1 + u) * (1 + u) - 1.

(** m^ = fl(fl(ss^ / n) + eps) is within eps_m m of m = ss / n + eps. *)
Lemma rms_mean : forall (x : list R) (t : dot_tree) (eps : R),
  let n := length x in (1 <= n)%nat -> INR (n + 2) * u < 1 ->
  F eps -> 0 <= eps -> Permutation (terms t) (sq_terms x) ->
  let m := sum_prod (sq_terms x) / INR n + eps in
  0 < m -> rms_eps_m n m < 1 ->
  Rabs (rnd (rnd (eval t / INR n) + eps) - m) <= rms_eps_m n m * m.
Proof.
  intros x t eps n Hn Hu Feps Heps Hp m Hm Hem.
  pose proof u_pos. pose proof u_small. pose proof eta_pos.
  assert (Hnu : INR n * u < 1) by (rewrite plus_INR in Hu; pose proof (pos_INR 2); nra).
  assert (Hlen : (length (terms t) <= n)%nat) by (rewrite (Permutation_length Hp); unfold sq_terms; rewrite map_length; lia).
  pose proof (B1_dot_bound_tree t n Hlen Hnu) as Hdot.
  rewrite (sum_prod_perm _ _ Hp), (sum_abs_perm _ _ Hp), sq_abs in Hdot.
  set (ss := sum_prod (sq_terms x)) in *.
  assert (Hss : 0 <= ss) by (unfold ss; rewrite <- sq_abs; apply sum_abs_nonneg).
  assert (HnR : 1 <= INR n) by (apply (le_INR 1); exact Hn).
  destruct (A1_standard_model (eval t / INR n)) as (d1 & e1 & Hd1 & He1 & _ & Hr1).
  destruct (A1_sum_exact_underflow (rnd (eval t / INR n)) eps (F_rnd _) Feps) as (d2 & Hd2 & Hr2).
  rewrite Hr2, Hr1.
  pose proof (gamma_nonneg n Hnu) as Hgn.
  assert (Hg2 : (1 + u) * ((1 + u) * (1 + gamma n)) <= 1 + gamma (n + 2)).
  { replace (n + 2)%nat with (S (S n)) by lia.
    assert (HS1 : INR (S n) * u < 1) by (rewrite S_INR; rewrite plus_INR in Hu; simpl in Hu; lra).
    assert (HS2 : INR (S (S n)) * u < 1) by (replace (S (S n)) with (n + 2)%nat by lia; exact Hu).
    pose proof (gamma_step n HS1). pose proof (gamma_step (S n) HS2).
    apply Rle_trans with ((1 + u) * (1 + gamma (S n))); [|assumption].
    apply Rmult_le_compat_l; lra. }
  unfold rms_eps_m in Hem |- *.
  assert (Hgl : gamma (n + 2) < 1) by (assert (0 <= 4 * eta / m) by (unfold Rdiv; apply Rmult_le_pos; [lra|apply Rlt_le, Rinv_0_lt_compat; lra]); lra).
  set (sn := ss / INR n) in *.
  assert (Hsn : 0 <= sn <= m) by (unfold m; unfold sn; split; [unfold Rdiv; apply Rmult_le_pos; [lra|apply Rlt_le, Rinv_0_lt_compat; lra]|lra]).
  (* the error of fl(ss^ / n) against ss / n *)
  assert (Hq : Rabs ((eval t / INR n) * (1 + d1) + e1 - sn) <= ((1 + u) * gamma n + u) * sn + ((1 + u) * (1 + gamma n) + 1) * eta).
  { replace ((eval t / INR n) * (1 + d1) + e1 - sn) with (((eval t - ss) / INR n) * (1 + d1) + d1 * sn + e1)
      by (unfold sn; field; lra).
    eapply Rle_trans; [apply Rabs_triang|]. eapply Rle_trans; [apply Rplus_le_compat_r, Rabs_triang|].
    rewrite !Rabs_mult. unfold Rdiv. rewrite Rabs_mult, (Rabs_pos_eq (/ INR n)) by (apply Rlt_le, Rinv_0_lt_compat; lra).
    rewrite (Rabs_pos_eq sn) by lra.
    assert (Hinv : / INR n <= 1) by (rewrite <- Rinv_1; apply Rinv_le_contravar; lra).
    assert (Hinv0 : 0 < / INR n) by (apply Rinv_0_lt_compat; lra).
    assert (H1d : Rabs (1 + d1) <= 1 + u) by (eapply Rle_trans; [apply Rabs_triang|]; rewrite Rabs_R1; lra).
    assert (K1 : Rabs (eval t - ss) * / INR n <= gamma n * sn + (1 + gamma n) * eta).
    { unfold sn. apply Rmult_le_compat_r with (r := / INR n) in Hdot; [|lra].
      eapply Rle_trans; [exact Hdot|]. unfold Rdiv.
      replace ((gamma n * ss + (1 + gamma n) * INR n * eta) * / INR n) with (gamma n * (ss * / INR n) + (1 + gamma n) * eta * (INR n * / INR n)) by ring.
      rewrite Rinv_r by lra. lra. }
    assert (K2 : Rabs (eval t - ss) * / INR n * Rabs (1 + d1) <= (gamma n * sn + (1 + gamma n) * eta) * (1 + u))
      by (apply Rmult_le_compat; try apply Rabs_pos; try (apply Rmult_le_pos; [apply Rabs_pos|lra]); assumption).
    assert (K3 : Rabs d1 * sn <= u * sn) by (apply Rmult_le_compat_r; lra).
    unfold Rdiv in *. lra. }
  replace ((eval t / INR n * (1 + d1) + e1 + eps) * (1 + d2) - m) with
    ((eval t / INR n * (1 + d1) + e1 - sn) * (1 + d2) + d2 * m) by (unfold m, sn; ring).
  eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult, (Rabs_pos_eq m) by lra.
  assert (H1d : Rabs (1 + d2) <= 1 + u) by (eapply Rle_trans; [apply Rabs_triang|]; rewrite Rabs_R1; lra).
  assert (K4 : Rabs (eval t / INR n * (1 + d1) + e1 - sn) * Rabs (1 + d2) <=
               (((1 + u) * gamma n + u) * sn + ((1 + u) * (1 + gamma n) + 1) * eta) * (1 + u))
    by (apply Rmult_le_compat; try apply Rabs_pos; assumption).
  assert (K5 : Rabs d2 * m <= u * m) by (apply Rmult_le_compat_r; lra).
  (* relative part: ((1+u)((1+u) g + u)) sn + u m <= gamma_{n+2} m *)
  assert (K6 : ((1 + u) * gamma n + u) * sn * (1 + u) + u * m <= gamma (n + 2) * m).
  { assert (Kc : ((1 + u) * gamma n + u) * (1 + u) + u <= gamma (n + 2)) by lra.
    assert (0 <= ((1 + u) * gamma n + u) * (1 + u)) by (apply Rmult_le_pos; [apply Rplus_le_le_0_compat; [apply Rmult_le_pos|]|]; lra).
    assert (((1 + u) * gamma n + u) * (1 + u) * sn <= ((1 + u) * gamma n + u) * (1 + u) * m) by (apply Rmult_le_compat_l; lra).
    replace (gamma (n + 2) * m) with ((((1 + u) * gamma n + u) * (1 + u) + u) * m + (gamma (n + 2) - (((1 + u) * gamma n + u) * (1 + u) + u)) * m) by ring.
    assert (0 <= (gamma (n + 2) - (((1 + u) * gamma n + u) * (1 + u) + u)) * m) by (apply Rmult_le_pos; lra).
    lra. }
  (* absolute part: (1+u)((1+u)(1+g) + 1) eta <= 4 eta = (4 eta / m) m *)
  assert (K7 : ((1 + u) * (1 + gamma n) + 1) * eta * (1 + u) <= 4 * eta / m * m).
  { replace (4 * eta / m * m) with (4 * eta) by (field; lra).
    assert ((1 + u) * ((1 + u) * (1 + gamma n)) + (1 + u) <= 4) by lra.
    replace (((1 + u) * (1 + gamma n) + 1) * eta * (1 + u)) with (((1 + u) * ((1 + u) * (1 + gamma n)) + (1 + u)) * eta) by ring.
    apply Rmult_le_compat_r; lra. }
  lra.
Qed.

(** r = fl(1 / fl(sqrt m^)) for a float m^ within eps_m m of m, m^ finite (< 2^128):
    |r sqrt m - 1| <= eps_r. *)
Lemma rms_rsqrt : forall m mh em,
  F mh -> 0 < m -> 0 <= em < 1 -> Rabs (mh - m) <= em * m -> mh <= bpow radix2 128 ->
  Rabs (rnd (1 / rnd (sqrt mh)) * sqrt m - 1) <= rms_eps_r em.
Proof.
  intros m mh em Fmh Hm Hem Hmh Hover.
  pose proof u_pos. pose proof u_small.
  apply Rabs_le_inv in Hmh.
  assert (Hmh0 : 0 < mh) by nra.
  assert (Hlo : bpow radix2 (-149) <= mh).
  { pose proof (F_abs_ge mh Fmh ltac:(lra)). rewrite Rabs_pos_eq in H1 by lra. exact H1. }
  assert (Hb252 : bpow radix2 (-126) = sqrt (bpow radix2 (-252))).
  { replace (bpow radix2 (-252)) with (bpow radix2 (-126) * bpow radix2 (-126)).
    - rewrite sqrt_square; [reflexivity|apply bpow_ge_0].
    - rewrite <- bpow_plus. reflexivity. }
  assert (Hsq_lo : bpow radix2 (-126) <= sqrt mh).
  { rewrite Hb252. apply sqrt_le_1_alt. apply Rle_trans with (bpow radix2 (-149)); [apply bpow_le; lia|exact Hlo]. }
  assert (Hsq_hi : sqrt mh <= bpow radix2 64).
  { replace (bpow radix2 64) with (sqrt (bpow radix2 64 * bpow radix2 64)) by (rewrite sqrt_square; [reflexivity|apply bpow_ge_0]).
    apply sqrt_le_1_alt. rewrite <- bpow_plus. exact Hover. }
  destruct (A1_normal_relative (sqrt mh)) as (d3 & Hd3 & Hr3).
  { rewrite Rabs_pos_eq by (apply sqrt_pos). exact Hsq_lo. }
  assert (Hd3' : - u <= d3 <= u) by (apply Rabs_le_inv; exact Hd3).
  assert (Hsqpos : 0 < sqrt mh) by (apply sqrt_lt_R0; lra).
  set (s1 := rnd (sqrt mh)) in *.
  assert (Hs1 : 0 < s1) by (rewrite Hr3; nra).
  assert (H64 : bpow radix2 64 = 18446744073709551616) by (simpl; lra).
  assert (Hs1hi : s1 <= 2 * bpow radix2 64) by (rewrite Hr3; rewrite H64 in *; nra).
  destruct (A1_normal_relative (1 / s1)) as (d4 & Hd4 & Hr4).
  { rewrite Rabs_pos_eq by (unfold Rdiv; rewrite Rmult_1_l; apply Rlt_le, Rinv_0_lt_compat; lra).
    unfold Rdiv. rewrite Rmult_1_l. apply Rle_trans with (/ (2 * bpow radix2 64)).
    - rewrite H64. simpl. lra.
    - apply Rinv_le_contravar; lra. }
  assert (Hd4' : - u <= d4 <= u) by (apply Rabs_le_inv; exact Hd4).
  rewrite Hr4.
  set (a := sqrt (1 - em)). set (b := sqrt (1 + em)).
  assert (Ha : 0 < a) by (apply sqrt_lt_R0; lra).
  assert (Hb : 0 < b) by (apply sqrt_lt_R0; lra).
  assert (Hab : a * b <= 1).
  { unfold a, b. rewrite <- sqrt_mult by lra. apply Rle_trans with (sqrt 1); [apply sqrt_le_1_alt; nra|rewrite sqrt_1; lra]. }
  assert (Hsqm : 0 < sqrt m) by (apply sqrt_lt_R0; lra).
  (* sqrt m^ between sqrt m a and sqrt m b *)
  assert (Hlow : sqrt m * a <= sqrt mh).
  { unfold a. rewrite <- sqrt_mult by lra. apply sqrt_le_1_alt. nra. }
  assert (Hhigh : sqrt mh <= sqrt m * b).
  { unfold b. rewrite <- sqrt_mult by lra. apply sqrt_le_1_alt. nra. }
  set (X := (1 + u) / (1 - u)).
  assert (HX : 1 <= X) by (unfold X; apply (Rmult_le_reg_r (1 - u)); [lra|]; unfold Rdiv; rewrite Rmult_assoc, Rinv_l; lra).
  unfold rms_eps_r. fold a.
  replace ((1 + u) / ((1 - u) * a)) with (X / a) by (unfold X; field; lra).
  replace (1 / s1 * (1 + d4) * sqrt m) with ((sqrt m / sqrt mh) * ((1 + d4) / (1 + d3))) by (rewrite Hr3; field; lra).
  set (z := sqrt m / sqrt mh).
  assert (Hz_hi : z <= / a).
  { unfold z. apply (Rmult_le_reg_r (sqrt mh)); [lra|]. unfold Rdiv. rewrite Rmult_assoc, Rinv_l, Rmult_1_r by lra.
    apply (Rmult_le_reg_l a); [lra|]. rewrite <- Rmult_assoc, Rinv_r by lra. lra. }
  assert (Hz_lo : / b <= z).
  { unfold z. apply (Rmult_le_reg_r (sqrt mh)); [lra|]. unfold Rdiv. rewrite Rmult_assoc, Rinv_l, Rmult_1_r by lra.
    apply (Rmult_le_reg_l b); [lra|]. rewrite <- Rmult_assoc, Rinv_r by lra. lra. }
  assert (Hf_hi : (1 + d4) / (1 + d3) <= X).
  { unfold X, Rdiv. apply Rmult_le_compat; [lra|apply Rlt_le, Rinv_0_lt_compat; lra|lra|].
    apply Rinv_le_contravar; lra. }
  assert (Hf_lo : / X <= (1 + d4) / (1 + d3)).
  { replace (/ X) with ((1 - u) * / (1 + u)) by (unfold X; field; lra).
    unfold Rdiv. apply Rmult_le_compat; [lra|apply Rlt_le, Rinv_0_lt_compat; lra|lra|].
    apply Rinv_le_contravar; lra. }
  assert (Hz0 : 0 <= z) by (unfold z, Rdiv; apply Rmult_le_pos; [lra|apply Rlt_le, Rinv_0_lt_compat; lra]).
  assert (Hf0 : 0 <= (1 + d4) / (1 + d3)) by (unfold Rdiv; apply Rmult_le_pos; [lra|apply Rlt_le, Rinv_0_lt_compat; lra]).
  assert (Hia : 0 < / a) by (apply Rinv_0_lt_compat; lra).
  assert (Hib : 0 < / b) by (apply Rinv_0_lt_compat; lra).
  assert (HiX : 0 < / X) by (apply Rinv_0_lt_compat; lra).
  assert (Hup : z * ((1 + d4) / (1 + d3)) <= X / a).
  { unfold Rdiv at 2. rewrite (Rmult_comm X). apply Rmult_le_compat; lra. }
  assert (Hdn : / b * / X <= z * ((1 + d4) / (1 + d3))) by (apply Rmult_le_compat; lra).
  (* X / a + 1 / (X b) >= 2 since (X / a) (1 / (X b)) = 1 / (a b) >= 1 *)
  assert (Hpq : 1 <= X / a * (/ b * / X)).
  { replace (X / a * (/ b * / X)) with (/ (a * b)) by (field; lra).
    rewrite <- Rinv_1. apply Rinv_le_contravar; [apply Rmult_lt_0_compat; lra|exact Hab]. }
  assert (Hsum : 2 <= X / a + / b * / X).
  { set (p := X / a) in *. set (q := / b * / X) in *.
    assert (0 <= p) by (unfold p, Rdiv; apply Rmult_le_pos; lra).
    assert (0 <= q) by (unfold q; apply Rmult_le_pos; lra).
    apply sum_ge_2; assumption. }
  apply Rabs_le. split; lra.
Qed.

(** [B2]: RMSNorm y_j = x_j w_j / sqrt m, m = sum x^2 / n + eps. Any tree for the sum of
    squares, m^ = fl(fl(ss^ / n) + eps) (the same in reals as x (1/n) with 1/n exact),
    r = fl(1 / fl(sqrt m^)), then either association of the two products:
    |y^_j - y_j| <= ((1 + eps_r)(1 + u)^2 - 1) |x_j w_j| / sqrt m
                    + eta ((1 + u) max(|x_j|, |w_j|) + 1),
    eps_m = gamma_{n+2} + 2^-148 / m < 1, eps_r = (1 + u) / ((1 - u) sqrt (1 - eps_m)) - 1;
    no overflow: m^ < 2^128. *)
Theorem B2_rmsnorm_bound :
  forall (x : list R) (t : dot_tree) (eps : R),
  let n := length x in (1 <= n)%nat -> INR (n + 2) * u < 1 ->
  F eps -> 0 <= eps -> Permutation (terms t) (sq_terms x) ->
  let m := sum_prod (sq_terms x) / INR n + eps in
  0 < m -> rms_eps_m n m < 1 ->
  let mh := rnd (rnd (eval t / INR n) + eps) in
  mh <= bpow radix2 128 ->
  let r := rnd (1 / rnd (sqrt mh)) in
  forall xj wj,
  let B := rms_rel (rms_eps_r (rms_eps_m n m)) * Rabs (xj * wj) / sqrt m +
           eta * ((1 + u) * Rmax (Rabs xj) (Rabs wj) + 1) in
  Rabs (rnd (rnd (xj * r) * wj) - xj * wj / sqrt m) <= B /\
  Rabs (rnd (xj * rnd (r * wj)) - xj * wj / sqrt m) <= B.
Proof.
  intros x t eps n Hn Hu Feps Heps Hp m Hm Hem mh Hover r xj wj B.
  pose proof u_pos. pose proof u_small. pose proof eta_pos.
  pose proof (rms_mean x t eps Hn Hu Feps Heps Hp Hm Hem) as Hmean. fold m mh in Hmean.
  assert (Hem0 : 0 <= rms_eps_m n m).
  { unfold rms_eps_m. assert (INR n * u < 1) by (rewrite plus_INR in Hu; pose proof (pos_INR 2); nra).
    apply Rplus_le_le_0_compat; [apply gamma_nonneg; exact Hu|].
    unfold Rdiv. apply Rmult_le_pos; [lra|apply Rlt_le, Rinv_0_lt_compat; lra]. }
  pose proof (rms_rsqrt m mh (rms_eps_m n m) (F_rnd _) Hm (conj Hem0 Hem) Hmean Hover) as Hr. fold r in Hr.
  set (er := rms_eps_r (rms_eps_m n m)) in *.
  assert (Hsqm : 0 < sqrt m) by (apply sqrt_lt_R0; lra).
  set (rho := r * sqrt m) in *.
  assert (Hrr : r = rho / sqrt m) by (unfold rho; field; lra).
  assert (Hmax1 : Rabs xj <= Rmax (Rabs xj) (Rabs wj)) by apply Rmax_l.
  assert (Hmax2 : Rabs wj <= Rmax (Rabs xj) (Rabs wj)) by apply Rmax_r.
  assert (Hrel0 : 0 <= rms_rel er) by (pose proof (Rabs_pos (rho - 1)); unfold rms_rel; nra).
  destruct (A1_standard_model (xj * r)) as (d5 & e5 & Hd5 & He5 & _ & Hr5).
  destruct (A1_standard_model (r * wj)) as (d5' & e5' & Hd5' & He5' & _ & Hr5').
  split.
  - destruct (A1_standard_model (rnd (xj * r) * wj)) as (d6 & e6 & Hd6 & He6 & _ & Hr6).
    rewrite Hr6, Hr5, Hrr.
    replace ((xj * (rho / sqrt m) * (1 + d5) + e5) * wj * (1 + d6) + e6 - xj * wj / sqrt m) with
      (xj * wj / sqrt m * (rho * (1 + d5) * (1 + d6) - 1) + (e5 * wj * (1 + d6) + e6)) by (field; lra).
    eapply Rle_trans; [apply Rabs_triang|]. unfold B.
    apply Rplus_le_compat.
    + rewrite Rabs_mult.
      replace (rms_rel er * Rabs (xj * wj) / sqrt m) with (Rabs (xj * wj / sqrt m) * rms_rel er)
        by (unfold Rdiv; rewrite Rabs_mult, Rabs_inv, (Rabs_pos_eq (sqrt m)) by lra; ring).
      apply Rmult_le_compat_l; [apply Rabs_pos|].
      unfold rms_rel. apply three_factors; [exact Hr| |].
      * replace (1 + d5 - 1) with d5 by ring. assumption.
      * replace (1 + d6 - 1) with d6 by ring. assumption.
    + eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult.
      assert (Rabs (1 + d6) <= 1 + u) by (eapply Rle_trans; [apply Rabs_triang|]; rewrite Rabs_R1; lra).
      assert (Rabs e5 * Rabs wj * Rabs (1 + d6) <= eta * Rabs wj * (1 + u))
        by (apply Rmult_le_compat; try apply Rmult_le_pos; try apply Rabs_pos; try assumption; apply Rmult_le_compat_r; [apply Rabs_pos|assumption]).
      assert (eta * Rabs wj * (1 + u) <= eta * Rmax (Rabs xj) (Rabs wj) * (1 + u))
        by (apply Rmult_le_compat_r; [lra|]; apply Rmult_le_compat_l; lra).
      lra.
  - destruct (A1_standard_model (xj * rnd (r * wj))) as (d6 & e6 & Hd6 & He6 & _ & Hr6).
    rewrite Hr6, Hr5', Hrr.
    replace (xj * (rho / sqrt m * wj * (1 + d5') + e5') * (1 + d6) + e6 - xj * wj / sqrt m) with
      (xj * wj / sqrt m * (rho * (1 + d5') * (1 + d6) - 1) + (xj * e5' * (1 + d6) + e6)) by (field; lra).
    eapply Rle_trans; [apply Rabs_triang|]. unfold B.
    apply Rplus_le_compat.
    + rewrite Rabs_mult.
      replace (rms_rel er * Rabs (xj * wj) / sqrt m) with (Rabs (xj * wj / sqrt m) * rms_rel er)
        by (unfold Rdiv; rewrite Rabs_mult, Rabs_inv, (Rabs_pos_eq (sqrt m)) by lra; ring).
      apply Rmult_le_compat_l; [apply Rabs_pos|].
      unfold rms_rel. apply three_factors; [exact Hr| |].
      * replace (1 + d5' - 1) with d5' by ring. assumption.
      * replace (1 + d6 - 1) with d6 by ring. assumption.
    + eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult.
      assert (Rabs (1 + d6) <= 1 + u) by (eapply Rle_trans; [apply Rabs_triang|]; rewrite Rabs_R1; lra).
      assert (Rabs xj * Rabs e5' * Rabs (1 + d6) <= Rabs xj * eta * (1 + u))
        by (apply Rmult_le_compat; try apply Rmult_le_pos; try apply Rabs_pos; try assumption; apply Rmult_le_compat_l; [apply Rabs_pos|assumption]).
      assert (Rabs xj * eta * (1 + u) <= eta * Rmax (Rabs xj) (Rabs wj) * (1 + u))
        by (apply Rmult_le_compat_r; [lra|]; rewrite Rmult_comm; apply Rmult_le_compat_l; lra).
      lra.
Qed.

(** ** Sums of floats (the softmax denominator) *)

(** Any evaluation order of a sum of floats: a tree of rounded additions over float leaves. *)
Inductive sum_tree : Type :=
| SLeaf : R -> sum_tree
| SAdd : sum_tree -> sum_tree -> sum_tree.

Fixpoint seval (t : sum_tree) : R :=
  match t with SLeaf x => x | SAdd l r => rnd (seval l + seval r) end.

Fixpoint leaves (t : sum_tree) : list R :=
  match t with SLeaf x => [x] | SAdd l r => leaves l ++ leaves r end.

Fixpoint sdepth (t : sum_tree) : nat :=
  match t with SLeaf _ => 0 | SAdd l r => S (Nat.max (sdepth l) (sdepth r)) end.

Definition rsum (l : list R) : R := fold_right Rplus 0 l.
Definition rsum_abs (l : list R) : R := fold_right (fun x s => Rabs x + s) 0 l.

Lemma rsum_app : forall a b, rsum (a ++ b) = rsum a + rsum b.
Proof. induction a as [|x a IH]; intro b; simpl; [ring|rewrite IH; ring]. Qed.
Lemma rsum_abs_app : forall a b, rsum_abs (a ++ b) = rsum_abs a + rsum_abs b.
Proof. induction a as [|x a IH]; intro b; simpl; [ring|rewrite IH; ring]. Qed.
Lemma rsum_abs_ge : forall l, Rabs (rsum l) <= rsum_abs l.
Proof. induction l as [|x l IH]; simpl; [rewrite Rabs_R0; lra|]. eapply Rle_trans; [apply Rabs_triang|]. lra. Qed.
Lemma rsum_abs_nonneg_eq : forall l, Forall (fun x => 0 <= x) l -> rsum_abs l = rsum l.
Proof. induction l as [|x l IH]; intro H; simpl; [reflexivity|]. inversion H; subst. rewrite IH, Rabs_pos_eq by assumption. reflexivity. Qed.

Lemma seval_F : forall t, Forall F (leaves t) -> F (seval t).
Proof.
  destruct t as [x|l r]; simpl; intro H; [inversion H; assumption|apply F_rnd].
Qed.

Lemma sdepth_le : forall t, (S (sdepth t) <= length (leaves t))%nat.
Proof.
  induction t as [x|l IHl r IHr]; simpl; [lia|]. rewrite app_length. lia.
Qed.

(** The invariant: |seval t - sum| <= gamma_depth sum |leaves| (additions of floats have no
    absolute error). *)
Lemma sum_tree_error : forall t, Forall F (leaves t) -> INR (sdepth t) * u < 1 ->
  Rabs (seval t - rsum (leaves t)) <= gamma (sdepth t) * rsum_abs (leaves t).
Proof.
  induction t as [x|l IHl r IHr]; intros HF Hu.
  - simpl. rewrite gamma_0. replace (x - (x + 0)) with 0 by ring. rewrite Rabs_R0. lra.
  - change (INR (S (Nat.max (sdepth l) (sdepth r))) * u < 1) in Hu.
    simpl in HF |- *. apply Forall_app in HF. destruct HF as [HFl HFr].
    set (dm := Nat.max (sdepth l) (sdepth r)) in *.
    pose proof u_pos.
    assert (Hdm : INR dm * u < 1) by (rewrite S_INR in Hu; lra).
    assert (Hl : INR (sdepth l) * u < 1) by (eapply Rle_lt_trans; [|exact Hdm]; apply Rmult_le_compat_r; [lra|]; apply le_INR; lia).
    assert (Hr : INR (sdepth r) * u < 1) by (eapply Rle_lt_trans; [|exact Hdm]; apply Rmult_le_compat_r; [lra|]; apply le_INR; lia).
    destruct (A1_sum_exact_underflow (seval l) (seval r) (seval_F l HFl) (seval_F r HFr)) as (d & Hd & Hs).
    rewrite Hs, rsum_app, rsum_abs_app.
    pose proof (step_add (rsum (leaves l)) (seval l) (rsum (leaves r)) (seval r)
                  (rsum_abs (leaves l)) (rsum_abs (leaves r)) 0 0 (gamma (sdepth l)) (gamma (sdepth r))
                  (gamma dm) (gamma (S dm)) d) as Hst.
    eapply Rle_trans; [apply Hst|].
    + specialize (IHl HFl Hl). lra.
    + specialize (IHr HFr Hr). lra.
    + apply rsum_abs_ge.
    + apply rsum_abs_ge.
    + lra.
    + lra.
    + split; [apply gamma_nonneg; exact Hl|apply gamma_mono; [lia|exact Hdm]].
    + split; [apply gamma_nonneg; exact Hr|apply gamma_mono; [lia|exact Hdm]].
    + apply gamma_step. exact Hu.
    + exact Hd.
    + lra.
Qed.

(** The sum of n >= 1 nonnegative floats in any order: S^ = S (1 + theta), |theta| <= gamma_{n-1}. *)
Lemma sum_nonneg_rel : forall t, Forall F (leaves t) -> Forall (fun x => 0 <= x) (leaves t) ->
  INR (length (leaves t) - 1) * u < 1 ->
  Rabs (seval t - rsum (leaves t)) <= gamma (length (leaves t) - 1) * rsum (leaves t).
Proof.
  intros t HF Hpos Hu. pose proof u_pos.
  pose proof (sdepth_le t) as Hd.
  assert (Hdu : INR (sdepth t) * u < 1) by (eapply Rle_lt_trans; [|exact Hu]; apply Rmult_le_compat_r; [lra|]; apply le_INR; lia).
  eapply Rle_trans; [exact (sum_tree_error t HF Hdu)|].
  rewrite (rsum_abs_nonneg_eq _ Hpos).
  apply Rmult_le_compat_r.
  - rewrite <- (rsum_abs_nonneg_eq _ Hpos). clear. induction (leaves t); simpl; [lra|]. pose proof (Rabs_pos a). lra.
  - apply gamma_mono; [lia|exact Hu].
Qed.

(** ** [B6] Softmax normalisation *)

Definition norm_rel (n : nat) : R := (1 + u) * (1 + u) / (1 - gamma (n - 1)) - 1.

(** [B6]: p_j = e_j / sum e over n nonnegative floats, the sum in any order, then one
    division, or a reciprocal and a product:
    |p^_j - p_j| <= p_j ((1 + u)^2 / (1 - gamma_{n-1}) - 1) + eta, plus (1 + u) e_j eta for the
    reciprocal when fl(1 / S^) is subnormal (S^ > 2^126; never for softmax, whose e_j <= 1). *)
Theorem B6_normalise_bound :
  forall (t : sum_tree) (ej : R),
  let n := length (leaves t) in
  Forall F (leaves t) -> Forall (fun x => 0 <= x) (leaves t) -> 0 < rsum (leaves t) ->
  gamma (n - 1) < 1 -> INR (n - 1) * u < 1 -> F ej -> 0 <= ej ->
  let S := rsum (leaves t) in let Sh := seval t in
  Rabs (rnd (ej / Sh) - ej / S) <= ej / S * norm_rel n + eta /\
  Rabs (rnd (ej * rnd (1 / Sh)) - ej / S) <= ej / S * norm_rel n + eta + (1 + u) * ej * eta.
Proof.
  intros t ej n HF Hpos HS Hg1 Hu Fe He S Sh.
  pose proof u_pos. pose proof u_small. pose proof eta_pos.
  pose proof (sum_nonneg_rel t HF Hpos Hu) as Hs. fold n S Sh in Hs.
  pose proof (gamma_nonneg (n - 1) Hu) as Hg0.
  set (g := gamma (n - 1)) in *.
  apply Rabs_le_inv in Hs.
  assert (HS' : 0 < S) by exact HS.
  assert (0 < (1 - g) * S) by (apply Rmult_lt_0_compat; lra).
  assert (HSh : 0 < Sh) by lra.
  (* z = S / Sh in [1 / (1 + g), 1 / (1 - g)] *)
  set (z := S / Sh).
  assert (Hz_hi : z <= / (1 - g)).
  { unfold z. apply (Rmult_le_reg_r Sh); [lra|]. unfold Rdiv. rewrite Rmult_assoc, Rinv_l, Rmult_1_r by lra.
    apply (Rmult_le_reg_l (1 - g)); [lra|]. rewrite <- Rmult_assoc, Rinv_r by lra. lra. }
  assert (Hz_lo : / (1 + g) <= z).
  { unfold z. apply (Rmult_le_reg_r Sh); [lra|]. unfold Rdiv. rewrite Rmult_assoc, Rinv_l, Rmult_1_r by lra.
    apply (Rmult_le_reg_l (1 + g)); [lra|]. rewrite <- Rmult_assoc, Rinv_r by lra. lra. }
  assert (Hz0 : 0 < z) by (eapply Rlt_le_trans; [|exact Hz_lo]; apply Rinv_0_lt_compat; lra).
  assert (Hp0 : 0 <= ej / S) by (unfold Rdiv; apply Rmult_le_pos; [lra|apply Rlt_le, Rinv_0_lt_compat; lra]).
  (* |z (1+a)(1+b) - 1| <= (1+u)^2/(1-g) - 1 *)
  assert (Hfac : forall a b, Rabs a <= u -> Rabs b <= u -> Rabs (z * (1 + a) * (1 + b) - 1) <= norm_rel n).
  { intros a b Ha Hb. apply Rabs_le_inv in Ha. apply Rabs_le_inv in Hb. unfold norm_rel. fold g.
    assert (Hab_hi : (1 + a) * (1 + b) <= (1 + u) * (1 + u)) by nra.
    assert (Hab_lo : (1 - u) * (1 - u) <= (1 + a) * (1 + b)) by nra.
    assert (Hinvg : / (1 + g) <= 1) by (rewrite <- Rinv_1; apply Rinv_le_contravar; lra).
    assert (Hinvg' : 1 <= / (1 - g)) by (rewrite <- Rinv_1; apply Rinv_le_contravar; lra).
    assert (Hsum : 2 <= (1 + u) * (1 + u) * / (1 - g) + (1 - u) * (1 - u) * / (1 + g)).
    { replace ((1 + u) * (1 + u) * / (1 - g) + (1 - u) * (1 - u) * / (1 + g)) with
        (((1 + u) * (1 + u) * (1 + g) + (1 - u) * (1 - u) * (1 - g)) * / ((1 - g) * (1 + g))) by (field; lra).
      assert (Hden : 0 < (1 - g) * (1 + g) <= 1) by nra.
      assert (Hinv : 1 <= / ((1 - g) * (1 + g))) by (rewrite <- Rinv_1; apply Rinv_le_contravar; lra).
      assert (Hnum : 2 <= (1 + u) * (1 + u) * (1 + g) + (1 - u) * (1 - u) * (1 - g)) by nra.
      nra. }
    apply Rabs_le. unfold Rdiv. split.
    - assert (z * (1 + a) * (1 + b) >= / (1 + g) * ((1 - u) * (1 - u))).
      { rewrite Rmult_assoc. apply Rle_ge, Rmult_le_compat; try lra. apply Rlt_le, Rinv_0_lt_compat; lra. nra. }
      lra.
    - assert (z * (1 + a) * (1 + b) <= / (1 - g) * ((1 + u) * (1 + u))).
      { rewrite Rmult_assoc. apply Rmult_le_compat; try lra. nra. }
      nra. }
  split.
  - destruct (A1_standard_model (ej / Sh)) as (d1 & e1 & Hd1 & He1 & _ & Hr1). rewrite Hr1.
    replace (ej / Sh * (1 + d1) + e1 - ej / S) with (ej / S * (z * (1 + d1) * (1 + 0) - 1) + e1) by (unfold z; field; lra).
    eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult, (Rabs_pos_eq (ej / S)) by exact Hp0.
    apply Rplus_le_compat; [|exact He1]. apply Rmult_le_compat_l; [exact Hp0|].
    apply Hfac; [exact Hd1|rewrite Rabs_R0; lra].
  - destruct (A1_standard_model (1 / Sh)) as (d1 & e1 & Hd1 & He1 & _ & Hr1).
    destruct (A1_standard_model (ej * rnd (1 / Sh))) as (d2 & e2 & Hd2 & He2 & _ & Hr2). rewrite Hr2, Hr1.
    replace (ej * (1 / Sh * (1 + d1) + e1) * (1 + d2) + e2 - ej / S) with
      (ej / S * (z * (1 + d1) * (1 + d2) - 1) + (ej * e1 * (1 + d2) + e2)) by (unfold z; field; lra).
    eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult, (Rabs_pos_eq (ej / S)) by exact Hp0.
    assert (K1 : ej / S * Rabs (z * (1 + d1) * (1 + d2) - 1) <= ej / S * norm_rel n)
      by (apply Rmult_le_compat_l; [exact Hp0|apply Hfac; assumption]).
    assert (K2 : Rabs (ej * e1 * (1 + d2) + e2) <= (1 + u) * ej * eta + eta).
    { eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult, (Rabs_pos_eq ej) by lra.
      assert (Rabs (1 + d2) <= 1 + u) by (eapply Rle_trans; [apply Rabs_triang|]; rewrite Rabs_R1; lra).
      assert (ej * Rabs e1 * Rabs (1 + d2) <= ej * eta * (1 + u))
        by (apply Rmult_le_compat; try apply Rmult_le_pos; try apply Rabs_pos; try lra; apply Rmult_le_compat_l; lra).
      lra. }
    lra.
Qed.

(** ** The exp clauses: B0 as a hypothesis *)

(** kExpRel = 0.94 * 2^-23 and kExpAbs = 0.94 * 2^-149 (verify/bounds/exp_error.hpp). *)
Definition kExpRel : R := 94 / 100 * bpow radix2 (-23).
Definition kExpAbs : R := 94 / 100 * bpow radix2 (-149).
(** The largest float whose exp is finite in binary32 (spec/arithmetic.md A4, step 1). *)
Definition exp_max : R := 5814540 / 65536.

Lemma kExp_pos : 0 < kExpRel /\ 0 < kExpAbs.
Proof. unfold kExpRel, kExpAbs. pose proof (bpow_gt_0 radix2 (-23)). pose proof (bpow_gt_0 radix2 (-149)). lra. Qed.

Lemma kExpRel_small : kExpRel <= 2 * u.
Proof. unfold kExpRel, u. simpl. lra. Qed.

Lemma kExpAbs_small : kExpAbs < bpow radix2 (-149).
Proof. unfold kExpAbs. pose proof (bpow_gt_0 radix2 (-149)). lra. Qed.

Lemma exp_mono : forall x y, x <= y -> exp x <= exp y.
Proof.
  intros x y H. destruct (Rle_lt_or_eq_dec x y H) as [H'|H']; [apply Rlt_le, exp_increasing; exact H'|rewrite H'; lra].
Qed.

(** |e^z - 1| <= e^a - 1 for |z| <= a. *)
Lemma exp_dev : forall z a, Rabs z <= a -> Rabs (exp z - 1) <= exp a - 1.
Proof.
  intros z a H. apply Rabs_le_inv in H.
  pose proof (exp_ineq1_le a). pose proof (exp_ineq1_le z).
  destruct (Rle_or_lt 0 z) as [Hz|Hz].
  - pose proof (exp_mono 0 z Hz). pose proof (exp_mono z a ltac:(lra)). rewrite exp_0 in *.
    rewrite Rabs_pos_eq by lra. lra.
  - pose proof (exp_mono z 0 ltac:(lra)). rewrite exp_0 in *.
    rewrite Rabs_left1 by lra. lra.
Qed.

Section Exp.

(** akv::exp as a function of the reals (its argument and result are floats). *)
Variable akv_exp : R -> R.

(** [B0], measured exhaustively over all 2^32 inputs (akv_exp_error), not proven: every
    theorem of this section takes it, and it appears in each one's statement after the
    section closes. The result of akv::exp is a float, and for every float x whose e^x is
    finite in binary32, |akv::exp(x) - e^x| <= kExpRel e^x + kExpAbs. *)
Hypothesis B0_exp_float : forall x, F (akv_exp x).
Hypothesis B0_exp_error : forall x, F x -> x <= exp_max -> Rabs (akv_exp x - exp x) <= kExpRel * exp x + kExpAbs.

(** B0 makes akv::exp nonnegative: a negative float is <= -2^-149, farther from e^x than B0 allows. *)
Lemma akv_exp_nonneg : forall x, F x -> x <= exp_max -> 0 <= akv_exp x.
Proof.
  intros x Fx Hx. destruct (Rle_or_lt 0 (akv_exp x)) as [H|H]; [exact H|exfalso].
  pose proof (F_abs_ge _ (B0_exp_float x) ltac:(lra)) as Hge. rewrite Rabs_left in Hge by exact H.
  pose proof (B0_exp_error x Fx Hx) as Hb. pose proof (exp_pos x). destruct kExp_pos.
  pose proof kExpAbs_small. pose proof kExpRel_small. pose proof u_small. pose proof u_pos.
  rewrite Rabs_left in Hb by lra.
  assert (kExpRel * exp x <= 1 * exp x) by (apply Rmult_le_compat_r; lra).
  lra.
Qed.

(** [B5]: e_j = akv::exp(fl(s_j - m)), m the maximum (s_j <= m, both floats), t = s_j - m:
    |e^_j - e^t| <= e^t (e^(u|t|) - 1) + kExpRel e^t e^(u|t|) + kExpAbs. Under B0. *)
Theorem B5_shifted_exp_bound : forall sj m, F sj -> F m -> sj <= m ->
  let t := sj - m in
  Rabs (akv_exp (rnd (sj - m)) - exp t) <=
    exp t * (exp (u * Rabs t) - 1) + kExpRel * exp t * exp (u * Rabs t) + kExpAbs.
Proof.
  intros sj m Fs Fm Hle t. pose proof u_pos. pose proof u_small. destruct kExp_pos.
  destruct (A1_sum_exact_underflow sj (- m) Fs (F_opp m Fm)) as (d & Hd & Hr).
  assert (Hr' : rnd (sj - m) = t * (1 + d)) by (unfold t, Rminus; exact Hr). rewrite Hr'.
  assert (Ht : t <= 0) by (unfold t; lra).
  assert (Hd' : - u <= d <= u) by (apply Rabs_le_inv; exact Hd).
  set (ft := t * (1 + d)).
  assert (Fft : F ft) by (unfold ft; rewrite <- Hr'; apply F_rnd).
  assert (Hft : ft <= exp_max) by (unfold ft, exp_max; nra).
  pose proof (B0_exp_error ft Fft Hft) as HB0.
  assert (Hsplit : exp ft = exp t * exp (t * d)) by (unfold ft; rewrite <- exp_plus; f_equal; ring).
  assert (Htd : Rabs (t * d) <= u * Rabs t) by (rewrite Rabs_mult, Rmult_comm; apply Rmult_le_compat_r; [apply Rabs_pos|exact Hd]).
  pose proof (exp_dev _ _ Htd) as Hdev.
  assert (Hexp_td : exp (t * d) <= exp (u * Rabs t)) by (apply exp_mono; apply Rabs_le_inv in Htd; lra).
  pose proof (exp_pos t) as Het.
  replace (akv_exp ft - exp t) with ((akv_exp ft - exp ft) + exp t * (exp (t * d) - 1)) by (rewrite Hsplit; ring).
  eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult, (Rabs_pos_eq (exp t)) by lra.
  assert (K1 : exp t * Rabs (exp (t * d) - 1) <= exp t * (exp (u * Rabs t) - 1)) by (apply Rmult_le_compat_l; lra).
  assert (K2 : kExpRel * exp ft <= kExpRel * exp t * exp (u * Rabs t)).
  { rewrite Hsplit, <- Rmult_assoc. apply Rmult_le_compat_l; [nra|exact Hexp_td]. }
  lra.
Qed.

(** [B6] composed with B5 (softmax_bounds): with A the exact sum of the computed e^, E_j the
    B5 bounds and B = sum e^t >= A - sum E > 0:
    |e^_j / A - e_j / B| <= E_j / A + (e^_j + E_j) / (A - sum E) * sum E / A. *)
Theorem B6_softmax_composition :
  forall (eh e E : list R) j,
  length eh = length e -> length E = length e -> (j < length e)%nat ->
  Forall (fun x => 0 <= x) eh ->
  (forall k, (k < length e)%nat -> Rabs (nth k eh 0 - nth k e 0) <= nth k E 0) ->
  let A := rsum eh in let B := rsum e in let SE := rsum E in
  0 < A - SE ->
  Rabs (nth j eh 0 / A - nth j e 0 / B) <= nth j E 0 / A + (nth j eh 0 + nth j E 0) / (A - SE) * SE / A.
Proof.
  intros eh e E j Hl1 Hl2 Hj Hpos Herr A B SE Hgap.
  (* |A - B| <= SE *)
  assert (HAB : Rabs (A - B) <= SE).
  { unfold A, B, SE. clear Hgap A B SE Hj Hpos.
    revert e E Hl1 Hl2 Herr. induction eh as [|x eh IH]; intros [|y e] [|z E] Hl1 Hl2 Herr; simpl in *; try discriminate.
    - rewrite Rminus_0_r, Rabs_R0. lra.
    - injection Hl1 as Hl1. injection Hl2 as Hl2.
      replace (x + rsum eh - (y + rsum e)) with ((x - y) + (rsum eh - rsum e)) by ring.
      eapply Rle_trans; [apply Rabs_triang|]. apply Rplus_le_compat.
      + apply (Herr 0%nat). lia.
      + apply IH; [exact Hl1|exact Hl2|]. intros k Hk. apply (Herr (S k)). lia. }
  assert (HSE : 0 <= SE) by (eapply Rle_trans; [apply Rabs_pos|exact HAB]).
  assert (HA : 0 < A) by lra.
  assert (HB : A - SE <= B) by (apply Rabs_le_inv in HAB; lra).
  assert (HB0 : 0 < B) by lra.
  pose proof (Herr j Hj) as Hej.
  assert (Hehj : 0 <= nth j eh 0).
  { rewrite Forall_forall in Hpos. apply Hpos. apply nth_In. lia. }
  set (x := nth j eh 0) in *. set (y := nth j e 0) in *. set (Ej := nth j E 0) in *.
  assert (Hy : Rabs y <= x + Ej) by (replace y with (x - (x - y)) by ring; eapply Rle_trans; [apply Rabs_triang|];
                                   rewrite Rabs_Ropp, Rabs_pos_eq by lra; lra).
  replace (x / A - y / B) with ((x - y) / A + y * (B - A) / (A * B)) by (field; lra).
  eapply Rle_trans; [apply Rabs_triang|].
  unfold Rdiv. rewrite !Rabs_mult, !Rabs_inv, (Rabs_pos_eq A), (Rabs_pos_eq (A * B)) by nra.
  apply Rplus_le_compat.
  - apply Rmult_le_compat_r; [apply Rlt_le, Rinv_0_lt_compat; lra|exact Hej].
  - rewrite <- Rabs_Ropp, Ropp_minus_distr in HAB.
    assert (Hinv : / (A * B) <= / (A - SE) * / A).
    { rewrite <- Rinv_mult. apply Rinv_le_contravar; [nra|]. nra. }
    assert (0 <= / (A * B)) by (apply Rlt_le, Rinv_0_lt_compat; nra).
    assert (Rabs y * Rabs (B - A) <= (x + Ej) * SE) by (apply Rmult_le_compat; try apply Rabs_pos; assumption).
    assert (0 <= Ej) by (eapply Rle_trans; [apply Rabs_pos|exact Hej]).
    assert (0 <= (x + Ej) * SE) by (apply Rmult_le_pos; lra).
    replace ((x + Ej) * / (A - SE) * SE * / A) with ((x + Ej) * SE * (/ (A - SE) * / A)) by ring.
    apply Rmult_le_compat; try assumption. apply Rmult_le_pos; apply Rabs_pos.
Qed.

Lemma nth_map_lt : forall (f : R -> R) l k, (k < length l)%nat -> nth k (map f l) 0 = f (nth k l 0).
Proof.
  intros f l k Hk. rewrite (nth_indep _ 0 (f 0)) by (rewrite map_length; exact Hk). apply map_nth.
Qed.

(** B5's bound as a function of t = s_j - m. *)
Definition shifted_exp_bound (t : R) : R :=
  exp t * (exp (u * Rabs t) - 1) + kExpRel * exp t * exp (u * Rabs t) + kExpAbs.

(** [B6] as softmax_bounds composes it: scores s (floats), m their maximum, e^_j =
    akv::exp(fl(s_j - m)) summed in any tree, p^_j = fl(e^_j / S^): with A = sum e^, E_j the
    B5 bounds and A - sum E > 0,
    |p^_j - e^(s_j - m) / sum e^(s_k - m)| <= E_j / A + (e^_j + E_j) / (A - sum E) * sum E / A
                                             + e^_j / A ((1 + u)^2 / (1 - gamma_{n-1}) - 1) + eta,
    and e^(s_j - m) / sum e^(s_k - m) is softmax(s)_j. Under B0. *)
Theorem B6_softmax_bound :
  forall (s : list R) (m : R) (t : sum_tree) (j : nat),
  Forall F s -> F m -> Forall (fun x => x <= m) s -> (j < length s)%nat ->
  let eh := map (fun x => akv_exp (rnd (x - m))) s in
  let e := map (fun x => exp (x - m)) s in
  let E := map (fun x => shifted_exp_bound (x - m)) s in
  let n := length s in
  leaves t = eh -> gamma (n - 1) < 1 -> INR (n - 1) * u < 1 -> 0 < rsum eh - rsum E ->
  let A := rsum eh in let SE := rsum E in
  Rabs (rnd (nth j eh 0 / seval t) - nth j e 0 / rsum e) <=
    nth j E 0 / A + (nth j eh 0 + nth j E 0) / (A - SE) * SE / A + nth j eh 0 / A * norm_rel n + eta /\
  nth j e 0 / rsum e = exp (nth j s 0) / rsum (map exp s).
Proof.
  intros s m t j Fs Fm Hle Hj eh e E n Ht Hg Hu Hgap A SE.
  assert (Hlen_eh : length eh = length s) by (unfold eh; apply map_length).
  assert (Hlen_e : length e = length s) by (unfold e; apply map_length).
  assert (Hlen_E : length E = length s) by (unfold E; apply map_length).
  assert (Hfl : forall x, In x s -> F (rnd (x - m)) /\ rnd (x - m) <= exp_max).
  { intros x Hx. split; [apply F_rnd|].
    rewrite Forall_forall in Hle. pose proof (Hle x Hx).
    apply Rle_trans with (rnd 0); [apply rnd_le; lra|]. rewrite rnd_0. unfold exp_max. lra. }
  assert (Hpos : Forall (fun x => 0 <= x) eh).
  { unfold eh. apply Forall_forall. intros y Hy. apply in_map_iff in Hy. destruct Hy as (x & <- & Hx).
    destruct (Hfl x Hx) as (HF & Hm). exact (akv_exp_nonneg (rnd (x - m)) HF Hm). }
  assert (HFe : Forall F eh).
  { unfold eh. apply Forall_forall. intros y Hy. apply in_map_iff in Hy. destruct Hy as (x & <- & _). apply B0_exp_float. }
  assert (Herr : forall k, (k < length e)%nat -> Rabs (nth k eh 0 - nth k e 0) <= nth k E 0).
  { intros k Hk. rewrite Hlen_e in Hk.
    unfold eh, e, E. rewrite !nth_map_lt by exact Hk.
    assert (Hin : In (nth k s 0) s) by (apply nth_In; exact Hk).
    rewrite Forall_forall in Fs, Hle.
    apply (B5_shifted_exp_bound (nth k s 0) m (Fs _ Hin) Fm (Hle _ Hin)). }
  assert (HSE0 : 0 <= SE).
  { unfold SE. clear -Herr Hlen_e Hlen_E Hlen_eh. revert Herr. unfold E, eh, e. clear.
    induction s as [|x s IH]; simpl; intro H; [lra|].
    pose proof (H 0%nat ltac:(lia)) as H0. simpl in H0.
    assert (0 <= shifted_exp_bound (x - m)) by (eapply Rle_trans; [apply Rabs_pos|exact H0]).
    assert (0 <= rsum (map (fun x0 => shifted_exp_bound (x0 - m)) s)).
    { apply IH. intros k Hk. apply (H (S k)). simpl. lia. }
    lra. }
  assert (HA : 0 < A) by (unfold A, SE in *; lra).
  (* the normalisation of the computed e^ *)
  assert (Hn : n = length (leaves t)) by (rewrite Ht; unfold n; symmetry; exact Hlen_eh).
  assert (Hej_in : In (nth j eh 0) eh) by (apply nth_In; lia).
  assert (Fej : F (nth j eh 0)) by (rewrite Forall_forall in HFe; apply HFe; exact Hej_in).
  assert (Hej0 : 0 <= nth j eh 0) by (rewrite Forall_forall in Hpos; apply Hpos; exact Hej_in).
  assert (HSt : 0 < rsum (leaves t)) by (rewrite Ht; exact HA).
  rewrite Hn in Hg, Hu.
  destruct (B6_normalise_bound t (nth j eh 0) (ltac:(rewrite Ht; exact HFe)) (ltac:(rewrite Ht; exact Hpos))
              HSt Hg Hu Fej Hej0) as (Hnorm & _).
  rewrite Ht in Hnorm. fold A in Hnorm. rewrite Hlen_eh in Hnorm. fold n in Hnorm.
  (* the exps' error through the quotient *)
  assert (Hl1 : length eh = length e) by lia.
  assert (Hl2 : length E = length e) by lia.
  pose proof (B6_softmax_composition eh e E j Hl1 Hl2 ltac:(lia) Hpos Herr Hgap) as Hc. fold A SE in Hc.
  split.
  - replace (rnd (nth j eh 0 / seval t) - nth j e 0 / rsum e) with
      ((rnd (nth j eh 0 / seval t) - nth j eh 0 / A) + (nth j eh 0 / A - nth j e 0 / rsum e)) by ring.
    eapply Rle_trans; [apply Rabs_triang|]. lra.
  - (* shift invariance: e^(s_j - m) / sum e^(s_k - m) = e^s_j / sum e^s_k *)
    assert (Hsum : rsum e = exp (- m) * rsum (map exp s)).
    { unfold e. clear. induction s as [|x s IH]; simpl; [ring|]. rewrite IH.
      replace (x - m) with (x + - m) by ring. rewrite exp_plus. ring. }
    assert (Hnth : nth j e 0 = exp (- m) * exp (nth j s 0)).
    { unfold e. rewrite nth_map_lt by exact Hj. replace (nth j s 0 - m) with (nth j s 0 + - m) by ring. rewrite exp_plus. ring. }
    assert (Hpos_sum : 0 < rsum (map exp s)).
    { destruct s as [|x s']; [simpl in Hj; lia|]. simpl.
      assert (0 <= rsum (map exp s')) by (clear; induction s' as [|y s' IH]; simpl; [lra|pose proof (exp_pos y); lra]).
      pose proof (exp_pos x). lra. }
    pose proof (exp_pos (- m)).
    rewrite Hsum, Hnth. field. split; lra.
Qed.

End Exp.

(** ** [B8] SiLU.gate *)

Definition swiglu_eps_d : R := kExpRel * (1 + u) + u + kExpAbs * (1 + u).

Definition swiglu_bound (g up : R) : R :=
  Rabs (g * up) / (1 + exp (- g)) * ((1 + u) * (1 + u) * (1 + u) / (1 - swiglu_eps_d) - 1) +
  eta * ((1 + u) * (Rabs up + 1) + 1 + (1 + u) * (1 + u) * Rabs (g * up)).

(** A quotient by d^ within eps_d d of d, times up to three roundings. *)
Lemma quotient_factor : forall d dh ed a b c,
  0 < d -> 0 <= ed < 1 -> Rabs (dh - d) <= ed * d -> Rabs a <= u -> Rabs b <= u -> Rabs c <= u ->
  Rabs (d / dh * (1 + a) * (1 + b) * (1 + c) - 1) <= (1 + u) * (1 + u) * (1 + u) / (1 - ed) - 1.
Proof.
  intros d dh ed a b c Hd Hed Hdh Ha Hb Hc. pose proof u_pos. pose proof u_small.
  apply Rabs_le_inv in Hdh. apply Rabs_le_inv in Ha. apply Rabs_le_inv in Hb. apply Rabs_le_inv in Hc.
  assert (Hdh0 : 0 < dh) by nra.
  set (z := d / dh).
  assert (Hz_hi : z <= / (1 - ed)).
  { unfold z. apply (Rmult_le_reg_r dh); [lra|]. unfold Rdiv. rewrite Rmult_assoc, Rinv_l, Rmult_1_r by lra.
    apply (Rmult_le_reg_l (1 - ed)); [lra|]. rewrite <- Rmult_assoc, Rinv_r by lra. lra. }
  assert (Hz_lo : / (1 + ed) <= z).
  { unfold z. apply (Rmult_le_reg_r dh); [lra|]. unfold Rdiv. rewrite Rmult_assoc, Rinv_l, Rmult_1_r by lra.
    apply (Rmult_le_reg_l (1 + ed)); [lra|]. rewrite <- Rmult_assoc, Rinv_r by lra. lra. }
  assert (Hz0 : 0 < / (1 + ed)) by (apply Rinv_0_lt_compat; lra).
  set (P := (1 + a) * (1 + b) * (1 + c)).
  assert (HP_hi : P <= (1 + u) * (1 + u) * (1 + u)).
  { unfold P. assert ((1 + a) * (1 + b) <= (1 + u) * (1 + u)) by nra.
    apply Rmult_le_compat; try lra. nra. }
  assert (HP_lo : (1 - u) * (1 - u) * (1 - u) <= P).
  { unfold P. assert ((1 - u) * (1 - u) <= (1 + a) * (1 + b)) by nra.
    apply Rmult_le_compat; try lra. nra. }
  replace (z * (1 + a) * (1 + b) * (1 + c)) with (z * P) by (unfold P; ring).
  assert (Hsum : 2 <= (1 + u) * (1 + u) * (1 + u) / (1 - ed) + (1 - u) * (1 - u) * (1 - u) / (1 + ed)).
  { replace ((1 + u) * (1 + u) * (1 + u) / (1 - ed) + (1 - u) * (1 - u) * (1 - u) / (1 + ed)) with
      (((1 + u) * (1 + u) * (1 + u) * (1 + ed) + (1 - u) * (1 - u) * (1 - u) * (1 - ed)) * / ((1 - ed) * (1 + ed)))
      by (field; lra).
    assert (Hden : 0 < (1 - ed) * (1 + ed) <= 1) by nra.
    assert (Hinv : 1 <= / ((1 - ed) * (1 + ed))) by (rewrite <- Rinv_1; apply Rinv_le_contravar; lra).
    assert (Hnum : 2 <= (1 + u) * (1 + u) * (1 + u) * (1 + ed) + (1 - u) * (1 - u) * (1 - u) * (1 - ed)).
    { assert (0 <= ed * ((1 + u) * (1 + u) * (1 + u) - (1 - u) * (1 - u) * (1 - u))) by (apply Rmult_le_pos; nra).
      nra. }
    nra. }
  set (A3 := (1 + u) * (1 + u) * (1 + u)) in *. set (B3 := (1 - u) * (1 - u) * (1 - u)) in *.
  assert (HA3 : 0 <= A3) by (unfold A3; nra). assert (HB3 : 0 <= B3) by (unfold B3; nra).
  unfold Rdiv in *. apply Rabs_le. split.
  - assert (K : / (1 + ed) * B3 <= z * P) by (apply Rmult_le_compat; lra).
    rewrite (Rmult_comm B3) in Hsum. lra.
  - assert (K : z * P <= / (1 - ed) * A3) by (apply Rmult_le_compat; lra).
    rewrite (Rmult_comm A3) in Hsum |- *. lra.
Qed.

Section Exp8.
Variable akv_exp : R -> R.
Hypothesis B0_exp_float : forall x, F (akv_exp x).
Hypothesis B0_exp_error : forall x, F x -> x <= exp_max -> Rabs (akv_exp x - exp x) <= kExpRel * exp x + kExpAbs.

(** d^ = fl(1 + akv::exp(-g)) is within eps_d d of d = 1 + e^-g, and d^ >= 1. *)
Lemma swiglu_denominator : forall g, F g -> - g <= exp_max ->
  let d := 1 + exp (- g) in let dh := rnd (1 + akv_exp (- g)) in
  Rabs (dh - d) <= swiglu_eps_d * d /\ 1 <= dh.
Proof.
  intros g Fg Hg d dh. pose proof u_pos. pose proof u_small. destruct kExp_pos as [Hr Ha].
  pose proof (B0_exp_error (- g) (F_opp g Fg) Hg) as HB.
  pose proof (akv_exp_nonneg akv_exp B0_exp_float B0_exp_error (- g) (F_opp g Fg) Hg) as Hnn.
  pose proof (exp_pos (- g)) as He.
  destruct (A1_sum_exact_underflow 1 (akv_exp (- g)) F_1 (B0_exp_float (- g))) as (d0 & Hd0 & Hr0).
  split.
  - unfold dh. rewrite Hr0.
    set (xi := akv_exp (- g) - exp (- g)).
    replace ((1 + akv_exp (- g)) * (1 + d0) - d) with (d * d0 + xi * (1 + d0)) by (unfold d, xi; ring).
    eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult, (Rabs_pos_eq d) by (unfold d; lra).
    assert (Hxi : Rabs xi <= (kExpRel + kExpAbs) * d).
    { eapply Rle_trans; [exact HB|]. unfold d. nra. }
    assert (H1d : Rabs (1 + d0) <= 1 + u) by (eapply Rle_trans; [apply Rabs_triang|]; rewrite Rabs_R1; lra).
    assert (K1 : d * Rabs d0 <= d * u) by (apply Rmult_le_compat_l; [unfold d; lra|exact Hd0]).
    assert (K2 : Rabs xi * Rabs (1 + d0) <= (kExpRel + kExpAbs) * d * (1 + u)) by (apply Rmult_le_compat; try apply Rabs_pos; assumption).
    unfold swiglu_eps_d. nra.
  - unfold dh. apply Rle_trans with (rnd 1); [rewrite (rnd_F 1 F_1); lra|].
    apply rnd_le. lra.
Qed.

Lemma swiglu_eps_d_small : 0 <= swiglu_eps_d < 1.
Proof.
  unfold swiglu_eps_d. pose proof u_pos. pose proof u_small. destruct kExp_pos. pose proof kExpRel_small.
  pose proof kExpAbs_small. assert (bpow radix2 (-149) <= u) by (unfold u; apply bpow_le; lia).
  assert (K1 : kExpRel * (1 + u) <= 2 * u * 2) by (apply Rmult_le_compat; lra).
  assert (K2 : kExpAbs * (1 + u) <= u * 2) by (apply Rmult_le_compat; lra).
  assert (0 <= kExpRel * (1 + u)) by (apply Rmult_le_pos; lra).
  assert (0 <= kExpAbs * (1 + u)) by (apply Rmult_le_pos; lra).
  split; lra.
Qed.

Lemma swiglu_finish : forall g up fac ab,
  Rabs (fac - 1) <= (1 + u) * (1 + u) * (1 + u) / (1 - swiglu_eps_d) - 1 ->
  Rabs ab <= eta * ((1 + u) * (Rabs up + 1) + 1 + (1 + u) * (1 + u) * Rabs (g * up)) ->
  Rabs (g * up / (1 + exp (- g)) * fac + ab - g * up / (1 + exp (- g))) <= swiglu_bound g up.
Proof.
  intros g up fac ab Hf Ha. pose proof (exp_pos (- g)).
  replace (g * up / (1 + exp (- g)) * fac + ab - g * up / (1 + exp (- g))) with
    (g * up / (1 + exp (- g)) * (fac - 1) + ab) by ring.
  eapply Rle_trans; [apply Rabs_triang|]. unfold swiglu_bound.
  apply Rplus_le_compat; [|exact Ha].
  rewrite Rabs_mult. unfold Rdiv. rewrite Rabs_mult, Rabs_inv, (Rabs_pos_eq (1 + exp (- g))) by lra.
  apply Rmult_le_compat_l; [apply Rmult_le_pos; [apply Rabs_pos|apply Rlt_le, Rinv_0_lt_compat; lra]|exact Hf].
Qed.

(** [B8]: y = g up / (1 + e^-g), d^ = fl(1 + akv::exp(-g)) (not overflowing: -g <= exp_max),
    in each of four forms: the reference fl(fl(g / d^) up), fl(fl(g up) / d^), and with
    r = fl(1 / d^): fl(fl(g r) up), fl(fl(g up) r):
    |y^ - y| <= |g up| / d ((1 + u)^3 / (1 - eps_d) - 1)
                + eta ((1 + u)(|up| + 1) + 1 + (1 + u)^2 |g up|),
    eps_d = kExpRel (1 + u) + u + kExpAbs (1 + u). Under B0. (The fifth arrangement
    fl(g fl(r up)) is not covered: its underflow term is (1 + u) |g| eta, see
    spec/bounds.md B8.) *)
Theorem B8_swiglu_bound : forall g up, F g -> - g <= exp_max ->
  let dh := rnd (1 + akv_exp (- g)) in
  let r := rnd (1 / dh) in
  let y := g * up / (1 + exp (- g)) in
  Rabs (rnd (rnd (g / dh) * up) - y) <= swiglu_bound g up /\
  Rabs (rnd (rnd (g * up) / dh) - y) <= swiglu_bound g up /\
  Rabs (rnd (rnd (g * r) * up) - y) <= swiglu_bound g up /\
  Rabs (rnd (rnd (g * up) * r) - y) <= swiglu_bound g up.
Proof.
  intros g up Fg Hg dh r y.
  pose proof u_pos. pose proof u_small. pose proof eta_pos. pose proof (exp_pos (- g)).
  destruct (swiglu_denominator g Fg Hg) as (Hdh & Hdh1). fold dh in Hdh, Hdh1.
  set (d := 1 + exp (- g)) in *.
  pose proof swiglu_eps_d_small as Hed.
  assert (Hd : 0 < d) by (unfold d; lra).
  assert (Hfac : forall a b c, Rabs a <= u -> Rabs b <= u -> Rabs c <= u ->
            Rabs (d / dh * (1 + a) * (1 + b) * (1 + c) - 1) <= (1 + u) * (1 + u) * (1 + u) / (1 - swiglu_eps_d) - 1)
    by (intros; apply quotient_factor; assumption).
  assert (Hu0 : Rabs 0 <= u) by (rewrite Rabs_R0; lra).
  assert (Hone : forall a, Rabs a <= u -> Rabs (1 + a) <= 1 + u) by (intros a Ha; eapply Rle_trans; [apply Rabs_triang|]; rewrite Rabs_R1; lra).
  set (AB := eta * ((1 + u) * (Rabs up + 1) + 1 + (1 + u) * (1 + u) * Rabs (g * up))).
  assert (HAB : forall x, 0 <= x -> x <= AB -> x <= AB) by auto.
  assert (Hgu : 0 <= Rabs (g * up)) by apply Rabs_pos.
  assert (Hup : 0 <= Rabs up) by apply Rabs_pos.
  (* r = fl(1 / d^) in [0, 1] *)
  assert (Hr01 : 0 <= r <= 1).
  { unfold r. split.
    - apply rnd_nonneg. unfold Rdiv. rewrite Rmult_1_l. apply Rlt_le, Rinv_0_lt_compat; lra.
    - apply Rle_trans with (rnd 1); [|rewrite (rnd_F 1 F_1); lra].
      apply rnd_le. unfold Rdiv. rewrite Rmult_1_l. rewrite <- Rinv_1. apply Rinv_le_contravar; lra. }
  split; [|split; [|split]].
  - destruct (A1_standard_model (g / dh)) as (a & e1 & Ha & He1 & _ & Hr1).
    destruct (A1_standard_model (rnd (g / dh) * up)) as (b & e2 & Hb & He2 & _ & Hr2).
    rewrite Hr2, Hr1. unfold y.
    replace ((g / dh * (1 + a) + e1) * up * (1 + b) + e2) with
      (g * up / d * (d / dh * (1 + a) * (1 + b) * (1 + 0)) + (e1 * up * (1 + b) + e2)) by (unfold d; field; lra).
    apply swiglu_finish; [apply Hfac; assumption|].
    eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult.
    assert (Rabs e1 * Rabs up * Rabs (1 + b) <= eta * Rabs up * (1 + u))
      by (apply Rmult_le_compat; try apply Rmult_le_pos; try apply Rabs_pos; [apply Rmult_le_compat_r; [apply Rabs_pos|exact He1]|apply Hone; exact Hb]).
    assert (0 <= eta * ((1 + u) * (1 + u) * (Rabs g * Rabs up))) by (apply Rmult_le_pos; [lra|]; apply Rmult_le_pos; [apply Rmult_le_pos; lra|apply Rmult_le_pos; apply Rabs_pos]).
    assert (0 <= eta * (1 + u)) by (apply Rmult_le_pos; lra).
    unfold AB. lra.
  - destruct (A1_standard_model (g * up)) as (a & e1 & Ha & He1 & _ & Hr1).
    destruct (A1_standard_model (rnd (g * up) / dh)) as (b & e2 & Hb & He2 & _ & Hr2).
    rewrite Hr2, Hr1. unfold y.
    replace ((g * up * (1 + a) + e1) / dh * (1 + b) + e2) with
      (g * up / d * (d / dh * (1 + a) * (1 + b) * (1 + 0)) + (e1 * (1 + b) / dh + e2)) by (unfold d; field; lra).
    apply swiglu_finish; [apply Hfac; assumption|].
    eapply Rle_trans; [apply Rabs_triang|]. unfold Rdiv. rewrite !Rabs_mult, Rabs_inv, (Rabs_pos_eq dh) by lra.
    assert (Hinv : / dh <= 1) by (rewrite <- Rinv_1; apply Rinv_le_contravar; lra).
    assert (Rabs e1 * Rabs (1 + b) <= eta * (1 + u)) by (apply Rmult_le_compat; try apply Rabs_pos; [exact He1|apply Hone; exact Hb]).
    assert (Rabs e1 * Rabs (1 + b) * / dh <= eta * (1 + u)).
    { rewrite <- (Rmult_1_r (eta * (1 + u))). apply Rmult_le_compat; try lra.
      apply Rmult_le_pos; apply Rabs_pos. apply Rlt_le, Rinv_0_lt_compat; lra. }
    assert (0 <= eta * ((1 + u) * (1 + u) * (Rabs g * Rabs up))) by (apply Rmult_le_pos; [lra|]; apply Rmult_le_pos; [apply Rmult_le_pos; lra|apply Rmult_le_pos; apply Rabs_pos]).
    assert (0 <= eta * (1 + u)) by (apply Rmult_le_pos; lra).
    unfold AB. assert (0 <= eta * Rabs up * (1 + u)) by (apply Rmult_le_pos; [apply Rmult_le_pos; [lra|apply Rabs_pos]|lra]). lra.
  - destruct (A1_standard_model (1 / dh)) as (c & e0 & Hc & He0 & _ & Hr0).
    destruct (A1_standard_model (g * r)) as (a & e1 & Ha & He1 & _ & Hr1).
    destruct (A1_standard_model (rnd (g * r) * up)) as (b & e2 & Hb & He2 & _ & Hr2).
    rewrite Hr2, Hr1. unfold r at 1. rewrite Hr0. unfold y.
    replace ((g * (1 / dh * (1 + c) + e0) * (1 + a) + e1) * up * (1 + b) + e2) with
      (g * up / d * (d / dh * (1 + a) * (1 + b) * (1 + c)) + (g * up * e0 * (1 + a) * (1 + b) + e1 * up * (1 + b) + e2))
      by (unfold d; field; lra).
    apply swiglu_finish; [apply Hfac; assumption|].
    eapply Rle_trans; [apply Rabs_triang|]. eapply Rle_trans; [apply Rplus_le_compat_r, Rabs_triang|].
    rewrite !Rabs_mult. rewrite <- (Rabs_mult g up).
    assert (K1 : Rabs (g * up) * Rabs e0 * Rabs (1 + a) * Rabs (1 + b) <= Rabs (g * up) * eta * (1 + u) * (1 + u)).
    { repeat apply Rmult_le_compat; try apply Rabs_pos; try apply Rmult_le_pos; try apply Rmult_le_pos; try apply Rabs_pos; try lra;
        try (apply Hone; assumption). }
    assert (K2 : Rabs e1 * Rabs up * Rabs (1 + b) <= eta * Rabs up * (1 + u))
      by (apply Rmult_le_compat; try apply Rmult_le_pos; try apply Rabs_pos; [apply Rmult_le_compat_r; [apply Rabs_pos|exact He1]|apply Hone; exact Hb]).
    assert (0 <= eta * ((1 + u) * (1 + u) * Rabs (g * up))) by (apply Rmult_le_pos; [lra|]; apply Rmult_le_pos; [apply Rmult_le_pos; lra|apply Rabs_pos]).
    assert (0 <= eta * (1 + u)) by (apply Rmult_le_pos; lra). assert (0 <= eta * Rabs up * (1 + u)) by (apply Rmult_le_pos; [apply Rmult_le_pos; [lra|apply Rabs_pos]|lra]).
    unfold AB. lra.
  - destruct (A1_standard_model (1 / dh)) as (c & e0 & Hc & He0 & _ & Hr0).
    destruct (A1_standard_model (g * up)) as (a & e1 & Ha & He1 & _ & Hr1).
    destruct (A1_standard_model (rnd (g * up) * r)) as (b & e2 & Hb & He2 & _ & Hr2).
    assert (Hr0' : r = 1 / dh * (1 + c) + e0) by exact Hr0.
    rewrite Hr2, Hr1. unfold y.
    replace ((g * up * (1 + a) + e1) * r * (1 + b) + e2) with
      (g * up / d * (d / dh * (1 + a) * (1 + b) * (1 + c)) + (g * up * (1 + a) * e0 * (1 + b) + e1 * r * (1 + b) + e2))
      by (rewrite Hr0'; unfold d; field; lra).
    apply swiglu_finish; [apply Hfac; assumption|].
    eapply Rle_trans; [apply Rabs_triang|]. eapply Rle_trans; [apply Rplus_le_compat_r, Rabs_triang|].
    rewrite !Rabs_mult. rewrite <- (Rabs_mult g up). rewrite (Rabs_pos_eq r) by lra.
    assert (K1 : Rabs (g * up) * Rabs (1 + a) * Rabs e0 * Rabs (1 + b) <= Rabs (g * up) * (1 + u) * eta * (1 + u)).
    { repeat apply Rmult_le_compat; try apply Rabs_pos; try apply Rmult_le_pos; try apply Rmult_le_pos; try apply Rabs_pos; try lra;
        try (apply Hone; assumption). }
    assert (K2 : Rabs e1 * r * Rabs (1 + b) <= eta * 1 * (1 + u))
      by (apply Rmult_le_compat; try apply Rmult_le_pos; try apply Rabs_pos; try lra; [apply Rmult_le_compat; try apply Rabs_pos; lra|apply Hone; exact Hb]).
    assert (0 <= eta * ((1 + u) * (1 + u) * Rabs (g * up))) by (apply Rmult_le_pos; [lra|]; apply Rmult_le_pos; [apply Rmult_le_pos; lra|apply Rabs_pos]).
    assert (0 <= eta * (1 + u)) by (apply Rmult_le_pos; lra). assert (0 <= eta * Rabs up * (1 + u)) by (apply Rmult_le_pos; [apply Rmult_le_pos; [lra|apply Rabs_pos]|lra]).
    unfold AB. lra.
Qed.

End Exp8.

(** [B8], the overflow branch: when akv::exp(-g) overflows the float result is +-0 and
    |y| <= |g up| e^g. *)
Theorem B8_overflow_branch : forall g up, Rabs (0 - g * up / (1 + exp (- g))) <= Rabs (g * up) * exp g.
Proof.
  intros g up. rewrite Rminus_0_l, Rabs_Ropp. pose proof (exp_pos (- g)). pose proof (exp_pos g).
  unfold Rdiv. rewrite Rabs_mult, Rabs_inv, (Rabs_pos_eq (1 + exp (- g))) by lra.
  apply Rmult_le_compat_l; [apply Rabs_pos|].
  rewrite <- (Rinv_inv (exp g)). apply Rinv_le_contravar; [apply Rinv_0_lt_compat; lra|].
  rewrite <- exp_Ropp. lra.
Qed.
