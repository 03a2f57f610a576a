(** * spec/theorems.md: I1 as the hypothesis, E1, E3 and E4 proven

    Over the model of state.v and operations.v, for any backend [forward] (any types of K/V
    bytes, logits rows and hidden state). [I1 forward kvf lgf] says the backend computes,
    for every token it is given, the K/V [kvf p] and the logits [lgf p] of the token
    sequence p up to and including it, whatever its hidden state, whenever the cache it
    reads holds those same functions of its own prefix. It is a hypothesis per backend: the
    reference discharges it by construction (spec/theorems.md I1), the optimized backends and
    kernel libraries by test (the I1_ suites, the gate's invariance checks).

    E3 needs no hypothesis on the backend; E1 and E4 take I1. *)

From Coq Require Import List Arith Bool Lia.
From Akv Require Import state operations.
Import ListNotations.

Section Theorems.
Context {KV Lg BS : Type}.
Variable forward : BS -> list (nat * KV) -> list nat -> BS * list (KV * Lg).
Variable vocab max_ctx : nat.

Notation append := (append forward vocab max_ctx).
Notation evict := (evict forward).
Notation build := (build forward vocab max_ctx).
Notation run := (run forward vocab max_ctx).
Notation step := (step forward vocab max_ctx).

(** The functions of the model and the token prefix that I1 says every entry and logits row is. *)
Variable kvf : list nat -> KV.
Variable lgf : list nat -> Lg.

(** The cache a token sequence [toks] has after [pre]: entry i holds token i and
    kvf (pre ++ toks[0..i]). *)
Fixpoint canon_from (pre toks : list nat) : list (nat * KV) :=
  match toks with
  | [] => []
  | t :: ts => (t, kvf (pre ++ [t])) :: canon_from (pre ++ [t]) ts
  end.

(** The rows a backend obeying I1 returns for [toks] after [pre]. *)
Fixpoint rows_of (pre toks : list nat) : list (KV * Lg) :=
  match toks with
  | [] => []
  | t :: ts => (kvf (pre ++ [t]), lgf (pre ++ [t])) :: rows_of (pre ++ [t]) ts
  end.

(** [I1] Invariance, the hypothesis: given a cache that is the canonical cache of its own
    tokens [pre], the rows for [toks] are those of [rows_of pre toks], for every hidden state
    (scratch left by earlier work, threads, ISA) and however the tokens were grouped. *)
Definition I1 : Prop :=
  forall st pre toks, snd (forward st (canon_from [] pre) toks) = rows_of pre toks.

(** A session's live spans are canonical after [pre]: each nonempty, its entries' tokens and
    K/V those of [canon_from], its kept row lgf of the prefix up to its end. *)
Fixpoint canon_spans (pre : list nat) (sps : list (@span KV Lg)) : Prop :=
  match sps with
  | [] => True
  | sp :: rest =>
      s_entries sp <> [] /\ map content (s_entries sp) = canon_from pre (span_tokens sp) /\
      s_kept sp = lgf (pre ++ span_tokens sp) /\ canon_spans (pre ++ span_tokens sp) rest
  end.

(** What a session of live spans [conv] must observe (E1's comparison), after [pre]. *)
Fixpoint expected (pre : list nat) (conv : list (nat * list nat)) : list (nat * list (nat * KV) * Lg) :=
  match conv with
  | [] => []
  | (id, ts) :: rest => (id, canon_from pre ts, lgf (pre ++ ts)) :: expected (pre ++ ts) rest
  end.

(** ** Lists *)

Lemma canon_from_app : forall a b pre, canon_from pre (a ++ b) = canon_from pre a ++ canon_from (pre ++ a) b.
Proof.
  induction a as [|t a IH]; intros b pre; simpl.
  - now rewrite app_nil_r.
  - rewrite IH. now rewrite <- app_assoc.
Qed.

Lemma rows_of_app : forall a b pre, rows_of pre (a ++ b) = rows_of pre a ++ rows_of (pre ++ a) b.
Proof.
  induction a as [|t a IH]; intros b pre; simpl.
  - now rewrite app_nil_r.
  - rewrite IH. now rewrite <- app_assoc.
Qed.

Lemma rows_of_length : forall toks pre, length (rows_of pre toks) = length toks.
Proof. induction toks as [|t ts IH]; intro pre; simpl; [reflexivity|now rewrite IH]. Qed.

Lemma mk_entries_content : forall toks pre w,
  map content (mk_entries toks (rows_of pre toks) w) = canon_from pre toks.
Proof. induction toks as [|t ts IH]; intros pre w; simpl; [reflexivity|]. unfold content at 1. simpl. now rewrite IH. Qed.

Lemma mk_entries_tokens : forall toks (rows : list (KV * Lg)) w, length rows = length toks -> map e_tok (mk_entries toks rows w) = toks.
Proof.
  induction toks as [|t ts IH]; intros rows w H; simpl; [reflexivity|].
  destruct rows as [|[kv lg] rs]; simpl in H; [discriminate|]. simpl. rewrite IH; [reflexivity|lia].
Qed.

Lemma mk_entries_serials : forall toks (rows : list (KV * Lg)) w, length rows = length toks ->
  map e_serial (mk_entries toks rows w) = seq (S w) (length toks).
Proof.
  induction toks as [|t ts IH]; intros rows w H; simpl; [reflexivity|].
  destruct rows as [|[kv lg] rs]; simpl in H; [discriminate|]. simpl. rewrite IH; [reflexivity|lia].
Qed.

Lemma mk_entries_length : forall toks (rows : list (KV * Lg)) w, length rows = length toks -> length (mk_entries toks rows w) = length toks.
Proof.
  intros. rewrite <- (map_length e_tok). now rewrite mk_entries_tokens.
Qed.

Lemma last_logits_rows_of : forall toks pre d, toks <> [] -> last_logits (rows_of pre toks) d = lgf (pre ++ toks).
Proof.
  intros toks. induction toks as [|t ts IH] using rev_ind; intros pre d H; [congruence|].
  rewrite rows_of_app. simpl. unfold last_logits. rewrite rev_app_distr. simpl.
  now rewrite app_assoc.
Qed.

Lemma canon_cache : forall sps pre, canon_spans pre sps -> map content (entries_of sps) = canon_from pre (tokens_of sps).
Proof.
  induction sps as [|sp sps IH]; intros pre H; simpl; [reflexivity|].
  destruct H as (_ & Hc & _ & Hr).
  unfold entries_of in *. simpl. rewrite map_app. rewrite tokens_of_cons, canon_from_app.
  rewrite Hc. f_equal. now apply IH.
Qed.

Lemma canon_spans_app : forall a b pre,
  canon_spans pre (a ++ b) <-> canon_spans pre a /\ canon_spans (pre ++ tokens_of a) b.
Proof.
  induction a as [|sp a IH]; intros b pre; simpl.
  - unfold tokens_of, entries_of. simpl. rewrite app_nil_r. tauto.
  - rewrite IH. rewrite tokens_of_cons, app_assoc. tauto.
Qed.

Lemma canon_observe : forall sps pre, canon_spans pre sps -> observe sps = expected pre (live_spans sps).
Proof.
  induction sps as [|sp sps IH]; intros pre H; simpl; [reflexivity|].
  destruct H as (_ & Hc & Hk & Hr). unfold observe in *. simpl. rewrite Hc, Hk. f_equal. now apply IH.
Qed.

Lemma tokens_of_live : forall (sps : list (@span KV Lg)), tokens_of sps = concat (map snd (live_spans sps)).
Proof.
  induction sps as [|sp sps IH]; simpl; [reflexivity|]. rewrite tokens_of_cons, IH. reflexivity.
Qed.

Lemma table_live : forall (a b : list (@span KV Lg)) start, live_spans a = live_spans b -> table_from start a = table_from start b.
Proof.
  induction a as [|sa a IH]; intros [|sb b] start H; simpl in *; try discriminate; [reflexivity|].
  injection H as Hid Ht Hr.
  assert (Hl : length (s_entries sa) = length (s_entries sb)).
  { unfold span_tokens in Ht. rewrite <- (map_length e_tok (s_entries sa)), <- (map_length e_tok (s_entries sb)). now rewrite Ht. }
  rewrite Hid, Hl. f_equal. now apply IH.
Qed.

Lemma next_logits_observe : forall (s1 s2 : session KV Lg BS), observe (spans s1) = observe (spans s2) -> next_logits s1 = next_logits s2.
Proof.
  intros [a ? ? ?] [b ? ? ?] H. unfold next_logits. simpl in *.
  unfold observe in H.
  assert (Hr : map (fun sp => (s_id sp, map content (s_entries sp), s_kept sp)) (rev a) =
               map (fun sp => (s_id sp, map content (s_entries sp), s_kept sp)) (rev b)) by (rewrite !map_rev; now rewrite H).
  destruct (rev a) as [|x ra]; destruct (rev b) as [|y rb]; simpl in Hr; try discriminate; [reflexivity|].
  injection Hr as _ _ Hk _. now rewrite Hk.
Qed.


(** ** append keeps a session canonical *)

(** The live spans after an append of [toks] to [id] (operations.v [extend], on tokens). *)
Definition extend_live (conv : list (nat * list nat)) (id : nat) (toks : list nat) : list (nat * list nat) :=
  match rev conv with
  | (lid, lt) :: before => if lid =? id then rev before ++ [(id, lt ++ toks)] else conv ++ [(id, toks)]
  | [] => conv ++ [(id, toks)]
  end.

Lemma live_spans_app : forall (a b : list (@span KV Lg)), live_spans (a ++ b) = live_spans a ++ live_spans b.
Proof. intros. unfold live_spans. apply map_app. Qed.

Lemma canon_one : forall pre sp, canon_spans pre [sp] <->
  s_entries sp <> [] /\ map content (s_entries sp) = canon_from pre (span_tokens sp) /\ s_kept sp = lgf (pre ++ span_tokens sp).
Proof. intros. simpl. tauto. Qed.

Lemma append_check_nonempty : forall size ev live last id toks,
  append_check vocab max_ctx size ev live last id toks = None -> toks <> [].
Proof. intros size ev live last id toks H. destruct toks; [discriminate|congruence]. Qed.

Lemma append_spec : I1 -> forall s id toks s' rows,
  canon_spans [] (spans s) -> append s id toks = Ok (s', rows) ->
  canon_spans [] (spans s') /\ live_spans (spans s') = extend_live (live_spans (spans s)) id toks /\
  evicted s' = evicted s /\ written s' = written s + length toks /\
  rows = map snd (rows_of (tokens_of (spans s)) toks).
Proof.
  intros HI s id toks s' rows Hc Ha.
  unfold operations.append in Ha.
  destruct (append_check _ _ _ _ _ _ _ _) eqn:Hchk; [discriminate|].
  pose proof (append_check_nonempty _ _ _ _ _ _ Hchk) as Hne.
  unfold cache in Ha. rewrite (canon_cache _ _ Hc) in Ha.
  destruct (forward (bstate s) (canon_from [] (tokens_of (spans s))) toks) as [st rs] eqn:Ef.
  assert (Hrs : rs = rows_of (tokens_of (spans s)) toks).
  { pose proof (HI (bstate s) (tokens_of (spans s)) toks) as H. now rewrite Ef in H. }
  subst rs. rewrite rows_of_length, Nat.eqb_refl in Ha. simpl in Ha.
  set (P := tokens_of (spans s)) in *.
  assert (Hlast : forall d, last_logits (rows_of P toks) d = lgf (P ++ toks)) by (intro d; now apply last_logits_rows_of).
  destruct (rev (rows_of P toks)) as [|[kv lg] rr] eqn:Er; [discriminate|].
  assert (Hlg : lg = lgf (P ++ toks)).
  { rewrite <- (Hlast lg). unfold last_logits. now rewrite Er. }
  injection Ha as <- <-. simpl.
  set (new := mk_entries toks (rows_of P toks) (written s)).
  assert (Hnew_tok : map e_tok new = toks) by (apply mk_entries_tokens; apply rows_of_length).
  assert (Hnew_ne : new <> []).
  { intro H. apply Hne. rewrite <- Hnew_tok, H. reflexivity. }
  split; [|split; [|split; [reflexivity|split; reflexivity]]].
  - unfold extend. destruct (rev (spans s)) as [|last before] eqn:Es.
    + apply canon_spans_app. split; [exact Hc|]. apply canon_one.
      unfold span_tokens. simpl. rewrite Hnew_tok. split; [exact Hnew_ne|split; [|exact Hlg]].
      apply mk_entries_content.
    + assert (Hsp : spans s = rev before ++ [last]) by (rewrite <- (rev_involutive (spans s)), Es; reflexivity).
      destruct (s_id last =? id) eqn:Eid.
      * pose proof Hc as Hc'. rewrite Hsp in Hc'. apply canon_spans_app in Hc'. destruct Hc' as (Hb & Hl).
        apply canon_one in Hl. destruct Hl as (Hlne & Hlc & _).
        assert (HP : P = tokens_of (rev before) ++ span_tokens last).
        { unfold P. rewrite Hsp, tokens_of_app. unfold tokens_of at 2, entries_of. simpl.
          now rewrite app_nil_r. }
        apply canon_spans_app. split; [exact Hb|]. apply canon_one.
        unfold span_tokens in *. simpl. simpl in Hlc. rewrite !map_app, Hnew_tok.
        split; [destruct (s_entries last); [congruence|discriminate]|].
        split.
        -- rewrite Hlc, canon_from_app. f_equal. unfold span_tokens in HP. rewrite <- HP.
           apply mk_entries_content.
        -- rewrite Hlg, HP. unfold span_tokens. now rewrite <- app_assoc.
      * apply canon_spans_app. split; [exact Hc|]. apply canon_one.
        unfold span_tokens. simpl. rewrite Hnew_tok. split; [exact Hnew_ne|split; [|exact Hlg]].
        apply mk_entries_content.
  - unfold extend, extend_live. unfold live_spans at 2. rewrite <- map_rev.
    destruct (rev (spans s)) as [|last before] eqn:Es; simpl.
    + rewrite live_spans_app. simpl. unfold span_tokens. simpl. now rewrite Hnew_tok.
    + destruct (s_id last =? id) eqn:Eid.
      * rewrite live_spans_app. unfold live_spans. rewrite map_rev. simpl.
        unfold span_tokens. simpl. rewrite map_app, Hnew_tok. reflexivity.
      * rewrite live_spans_app. simpl. unfold span_tokens. simpl. now rewrite Hnew_tok.
Qed.


(** ** evict keeps a session canonical *)

Definition keep_live (ids : list nat) (p : nat * list nat) : bool := negb (mem (fst p) ids).

(** The statistics O3 reports, from the live spans alone. *)
Definition evict_stats (conv : list (nat * list nat)) (ids : list nat) : stats :=
  let pre := take_while (keep_live ids) conv in
  let rest := drop_while (keep_live ids) conv in
  let X := concat (map snd (filter (keep_live ids) rest)) in
  (length (concat (map snd pre)), length (concat (map snd rest)) - length X, length X).

Lemma take_drop : forall {A} (p : A -> bool) l, take_while p l ++ drop_while p l = l.
Proof. induction l as [|a l IH]; simpl; [reflexivity|]. destruct (p a); simpl; [now rewrite IH|reflexivity]. Qed.

Lemma take_while_all : forall {A} (p : A -> bool) l, forallb p (take_while p l) = true.
Proof. induction l as [|a l IH]; simpl; [reflexivity|]. destruct (p a) eqn:E; simpl; [now rewrite E, IH|reflexivity]. Qed.

Lemma filter_all : forall {A} (p : A -> bool) l, forallb p l = true -> filter p l = l.
Proof.
  induction l as [|a l IH]; simpl; intro H; [reflexivity|].
  apply andb_true_iff in H. destruct H as [Ha Hl]. rewrite Ha. now rewrite IH.
Qed.

Lemma map_take_while : forall {A B} (f : A -> B) (p : B -> bool) l,
  map f (take_while (fun a => p (f a)) l) = take_while p (map f l).
Proof. induction l as [|a l IH]; simpl; [reflexivity|]. destruct (p (f a)); simpl; [now rewrite IH|reflexivity]. Qed.

Lemma map_drop_while : forall {A B} (f : A -> B) (p : B -> bool) l,
  map f (drop_while (fun a => p (f a)) l) = drop_while p (map f l).
Proof. induction l as [|a l IH]; simpl; [reflexivity|]. destruct (p (f a)); simpl; [now rewrite IH|reflexivity]. Qed.

Lemma map_filter' : forall {A B} (f : A -> B) (p : B -> bool) l,
  map f (filter (fun a => p (f a)) l) = filter p (map f l).
Proof. induction l as [|a l IH]; simpl; [reflexivity|]. destruct (p (f a)); simpl; [now rewrite IH|exact IH]. Qed.

Lemma live_take : forall ids (sps : list (@span KV Lg)),
  live_spans (take_while (keep ids) sps) = take_while (keep_live ids) (live_spans sps).
Proof. intros. unfold live_spans. apply (map_take_while (fun sp => (s_id sp, span_tokens sp)) (keep_live ids)). Qed.

Lemma live_drop : forall ids (sps : list (@span KV Lg)),
  live_spans (drop_while (keep ids) sps) = drop_while (keep_live ids) (live_spans sps).
Proof. intros. unfold live_spans. apply (map_drop_while (fun sp => (s_id sp, span_tokens sp)) (keep_live ids)). Qed.

Lemma live_filter : forall ids (sps : list (@span KV Lg)),
  live_spans (filter (keep ids) sps) = filter (keep_live ids) (live_spans sps).
Proof. intros. unfold live_spans. apply (map_filter' (fun sp => (s_id sp, span_tokens sp)) (keep_live ids)). Qed.

Lemma length_entries_live : forall (sps : list (@span KV Lg)),
  length (entries_of sps) = length (concat (map snd (live_spans sps))).
Proof. intros. rewrite <- tokens_of_live. unfold tokens_of. now rewrite map_length. Qed.

Lemma canon_nonempty : forall sps pre, canon_spans pre sps -> Forall (fun sp : @span KV Lg => s_entries sp <> []) sps.
Proof.
  induction sps as [|sp sps IH]; intros pre H; [constructor|].
  destruct H as (Hne & _ & _ & Hr). constructor; [exact Hne|]. eapply IH. exact Hr.
Qed.

Lemma tokens_nil : forall (sps : list (@span KV Lg)), Forall (fun sp => s_entries sp <> []) sps -> tokens_of sps = [] -> sps = [].
Proof.
  intros [|sp sps] Hf Ht; [reflexivity|]. inversion Hf as [|? ? Hne _]; subst.
  rewrite tokens_of_cons in Ht. apply app_eq_nil in Ht. destruct Ht as [Ht _].
  unfold span_tokens in Ht. apply map_eq_nil in Ht. congruence.
Qed.

Lemma span_tokens_length : forall (sp : @span KV Lg), length (span_tokens sp) = length (s_entries sp).
Proof. intro. unfold span_tokens. apply map_length. Qed.

Lemma regroup_spec : forall surv P w, Forall (fun sp : @span KV Lg => s_entries sp <> []) surv ->
  canon_spans P (regroup surv (rows_of P (tokens_of surv)) w) /\
  live_spans (regroup surv (rows_of P (tokens_of surv)) w) = live_spans surv.
Proof.
  induction surv as [|sp surv IH]; intros P w Hf; simpl; [split; reflexivity|].
  inversion Hf as [|? ? Hne Hfs]; subst.
  rewrite tokens_of_cons, rows_of_app.
  rewrite <- span_tokens_length.
  rewrite firstn_app, skipn_app, rows_of_length, Nat.sub_diag, firstn_O, skipn_O, app_nil_r.
  rewrite firstn_all2 by (rewrite rows_of_length; lia).
  rewrite skipn_all2 by (rewrite rows_of_length; lia). simpl.
  assert (Hst : span_tokens sp <> []).
  { unfold span_tokens. intro H. apply map_eq_nil in H. congruence. }
  assert (Htok : map e_tok (mk_entries (span_tokens sp) (rows_of P (span_tokens sp)) w) = span_tokens sp)
    by (apply mk_entries_tokens; apply rows_of_length).
  destruct (IH (P ++ span_tokens sp) (w + length (span_tokens sp)) Hfs) as (Hc & Hl).
  assert (Hnt : span_tokens (mk_span (s_id sp) (mk_entries (span_tokens sp) (rows_of P (span_tokens sp)) w)
                                     (last_logits (rows_of P (span_tokens sp)) (s_kept sp))) = span_tokens sp)
    by exact Htok.
  split.
  - simpl. rewrite Hnt.
    split; [|split; [|split]].
    + intro H. rewrite H in Htok. simpl in Htok. apply Hst. exact (eq_sym Htok).
    + apply mk_entries_content.
    + now apply last_logits_rows_of.
    + exact Hc.
  - simpl. rewrite Hl. now rewrite Hnt.
Qed.

Lemma evict_spec : I1 -> forall s ids s' st,
  canon_spans [] (spans s) -> evict s ids = Ok (s', st) ->
  canon_spans [] (spans s') /\
  live_spans (spans s') = filter (keep_live ids) (live_spans (spans s)) /\
  evicted s' = evicted s ++ ids /\
  st = evict_stats (live_spans (spans s)) ids.
Proof.
  intros HI s ids s' st Hc He.
  unfold operations.evict in He.
  destruct (evict_check _ _ _) eqn:Hchk; [discriminate|].
  set (pre := take_while (keep ids) (spans s)) in *.
  set (rest := drop_while (keep ids) (spans s)) in *.
  set (surv := filter (keep ids) rest) in *.
  assert (Hsp : spans s = pre ++ rest) by (symmetry; apply take_drop).
  pose proof Hc as Hc2. rewrite Hsp in Hc2. apply canon_spans_app in Hc2. destruct Hc2 as (Hpre & Hrest).
  assert (Hfs : Forall (fun sp => s_entries sp <> []) surv).
  { apply Forall_forall. intros x Hx. unfold surv in Hx. apply filter_In in Hx. destruct Hx as [Hx _].
    pose proof (canon_nonempty _ _ Hrest) as Hf. rewrite Forall_forall in Hf. now apply Hf. }
  assert (Hlive : filter (keep_live ids) (live_spans (spans s)) = live_spans pre ++ live_spans surv).
  { rewrite Hsp, live_spans_app, filter_app. unfold surv. rewrite live_filter.
    f_equal. unfold pre. rewrite live_take. apply filter_all, take_while_all. }
  assert (Hstats : evict_stats (live_spans (spans s)) ids =
                   (length (entries_of pre), length (entries_of rest) - length (tokens_of surv), length (tokens_of surv))).
  { unfold evict_stats. rewrite <- live_take, <- live_drop. fold pre rest.
    rewrite <- live_filter. fold surv. rewrite !length_entries_live, <- !tokens_of_live. reflexivity. }
  destruct (tokens_of surv) as [|t ts] eqn:EX.
  - injection He as <- <-. simpl. repeat split.
    + exact Hpre.
    + rewrite Hlive. rewrite (tokens_nil surv Hfs EX). simpl. now rewrite app_nil_r.
    + rewrite Hstats. reflexivity.
  - rewrite <- EX in He. unfold cache in He.
    rewrite (canon_cache _ _ Hpre) in He.
    destruct (forward (bstate s) (canon_from [] (tokens_of pre)) (tokens_of surv)) as [st' rows] eqn:Ef.
    assert (Hrows : rows = rows_of (tokens_of pre) (tokens_of surv)).
    { pose proof (HI (bstate s) (tokens_of pre) (tokens_of surv)) as H. now rewrite Ef in H. }
    rewrite Hrows, rows_of_length, Nat.eqb_refl in He. simpl in He.
    injection He as <- <-. simpl.
    destruct (regroup_spec surv (tokens_of pre) (written s) Hfs) as (Hcr & Hlr).
    repeat split.
    + apply canon_spans_app. split; [exact Hpre|]. exact Hcr.
    + rewrite Hlive, live_spans_app, Hlr. reflexivity.
    + rewrite Hstats, EX. reflexivity.
Qed.


(** ** Building a conversation *)

(** A conversation akv accepts: distinct span ids, each span nonempty, every token in the
    vocabulary, the whole within the context. *)
Definition valid_conv (conv : list (nat * list nat)) : Prop :=
  NoDup (map fst conv) /\
  Forall (fun p => snd p <> [] /\ Forall (fun t => t < vocab) (snd p)) conv /\
  length (concat (map snd conv)) <= max_ctx.

Lemma mem_In : forall i l, mem i l = true <-> In i l.
Proof.
  intros i l. unfold mem. rewrite existsb_exists. split.
  - intros (x & Hx & E). apply Nat.eqb_eq in E. now subst.
  - intro H. exists i. split; [exact H|apply Nat.eqb_refl].
Qed.

Lemma mem_false : forall i l, ~ In i l -> mem i l = false.
Proof. intros i l H. destruct (mem i l) eqn:E; [apply mem_In in E; contradiction|reflexivity]. Qed.

Lemma length_cache : forall (s : session KV Lg BS), length (cache s) = length (concat (map snd (live_spans (spans s)))).
Proof. intro s. unfold cache. apply length_entries_live. Qed.

Lemma live_ids_spans : forall (s : session KV Lg BS), live_ids s = map fst (live_spans (spans s)).
Proof. intro s. unfold live_ids, live_spans. rewrite map_map. reflexivity. Qed.

Lemma append_new_ok : I1 -> forall s id toks,
  canon_spans [] (spans s) -> toks <> [] -> Forall (fun t => t < vocab) toks ->
  length (cache s) + length toks <= max_ctx -> ~ In id (evicted s) -> ~ In id (live_ids s) ->
  exists s' rows, append s id toks = Ok (s', rows) /\ canon_spans [] (spans s') /\
    live_spans (spans s') = live_spans (spans s) ++ [(id, toks)] /\ evicted s' = evicted s /\
    written s' = written s + length toks.
Proof.
  intros HI s id toks Hc Hne Hv Hctx Hev Hlive.
  assert (Hchk : append_check vocab max_ctx (length (cache s)) (mem id (evicted s)) (live_ids s) (last_id s) id toks = None).
  { unfold append_check.
    destruct toks as [|t ts]; [congruence|].
    assert (Hx : existsb (fun t0 => vocab <=? t0) (t :: ts) = false).
    { destruct (existsb _ _) eqn:E; [|reflexivity]. apply existsb_exists in E. destruct E as (x & Hx & Hle).
      rewrite Forall_forall in Hv. specialize (Hv x Hx). apply Nat.leb_le in Hle. lia. }
    rewrite Hx. replace (max_ctx <? length (cache s) + length (t :: ts)) with false by (symmetry; apply Nat.ltb_ge; lia).
    rewrite (mem_false _ _ Hev), (mem_false _ _ Hlive). reflexivity. }
  assert (Hok : exists s' rows, append s id toks = Ok (s', rows)).
  { unfold operations.append. rewrite Hchk. unfold cache. rewrite (canon_cache _ _ Hc).
    destruct (forward (bstate s) (canon_from [] (tokens_of (spans s))) toks) as [st rows] eqn:Ef.
    assert (Hrows : rows = rows_of (tokens_of (spans s)) toks).
    { pose proof (HI (bstate s) (tokens_of (spans s)) toks) as H. now rewrite Ef in H. }
    subst rows. rewrite rows_of_length, Nat.eqb_refl. simpl.
    destruct (rev (rows_of (tokens_of (spans s)) toks)) as [|[kv lg] rr] eqn:Er.
    - apply (f_equal (@length _)) in Er. rewrite rev_length, rows_of_length in Er. destruct toks; [congruence|discriminate].
    - eexists. eexists. reflexivity. }
  destruct Hok as (s' & rows & Ha). exists s', rows. split; [exact Ha|].
  destruct (append_spec HI s id toks s' rows Hc Ha) as (Hc' & Hl & He & Hw & _).
  split; [exact Hc'|split; [|split; [exact He|exact Hw]]].
  rewrite Hl. unfold extend_live.
  destruct (rev (live_spans (spans s))) as [|[lid lt] before] eqn:Er; [reflexivity|].
  destruct (lid =? id) eqn:Eid; [|reflexivity].
  exfalso. apply Hlive. apply Nat.eqb_eq in Eid. subst lid.
  rewrite live_ids_spans. apply in_rev. rewrite <- map_rev, Er. left. reflexivity.
Qed.

Lemma build_ok : I1 -> forall C s,
  canon_spans [] (spans s) -> NoDup (map fst C) ->
  Forall (fun p => snd p <> [] /\ Forall (fun t => t < vocab) (snd p)) C ->
  length (cache s) + length (concat (map snd C)) <= max_ctx ->
  (forall id, In id (map fst C) -> ~ In id (evicted s) /\ ~ In id (live_ids s)) ->
  exists s', build s C = Ok s' /\ canon_spans [] (spans s') /\
    live_spans (spans s') = live_spans (spans s) ++ C /\ evicted s' = evicted s /\
    written s' = written s + length (concat (map snd C)).
Proof.
  intros HI C. induction C as [|[id toks] C IH]; intros s Hc Hnd Hf Hctx Hids.
  - exists s. simpl. rewrite app_nil_r, Nat.add_0_r. repeat split; assumption.
  - simpl in Hnd, Hctx. inversion Hnd as [|? ? Hni Hnd']; subst.
    inversion Hf as [|? ? [Hne Hv] Hf']; subst. simpl in Hne, Hv.
    rewrite app_length in Hctx.
    destruct (Hids id (or_introl eq_refl)) as (Hev & Hlv).
    destruct (append_new_ok HI s id toks Hc Hne Hv ltac:(lia) Hev Hlv) as (s1 & rows & Ha & Hc1 & Hl1 & He1 & Hw1).
    assert (Hsz : length (cache s1) = length (cache s) + length toks).
    { rewrite !length_cache, Hl1, map_app, concat_app, app_length. simpl. now rewrite app_nil_r. }
    destruct (IH s1 Hc1 Hnd' Hf' ltac:(lia)) as (s2 & Hb & Hc2 & Hl2 & He2 & Hw2).
    { intros i Hi. rewrite He1. split.
      - apply Hids. now right.
      - rewrite live_ids_spans, Hl1, map_app. simpl. intro H. apply in_app_or in H. destruct H as [H|[H|[]]].
        + apply (Hids i (or_intror Hi)). now rewrite live_ids_spans.
        + subst. contradiction. }
    exists s2. simpl. rewrite Ha. split; [exact Hb|]. split; [exact Hc2|]. split.
    + rewrite Hl2, Hl1, <- app_assoc. reflexivity.
    + split; [congruence|]. rewrite Hw2, Hw1, app_length. simpl. lia.
Qed.


(** ** Later operations on two sessions with the same live spans *)

Definition op_ids (o : op) : list nat := match o with OpAppend id _ => [id] | OpEvict ids => ids end.

(** Two canonical sessions with the same live spans, whose evicted sets agree outside S. *)
Definition related (S : list nat) (s1 s2 : session KV Lg BS) : Prop :=
  canon_spans [] (spans s1) /\ canon_spans [] (spans s2) /\
  live_spans (spans s1) = live_spans (spans s2) /\
  (forall i, ~ In i S -> (In i (evicted s1) <-> In i (evicted s2))).

Lemma last_id_live : forall (s : session KV Lg BS),
  last_id s = match rev (live_spans (spans s)) with [] => None | p :: _ => Some (fst p) end.
Proof.
  intro s. unfold last_id, live_spans. rewrite <- map_rev. destruct (rev (spans s)); reflexivity.
Qed.

Lemma append_ok : I1 -> forall s id toks,
  canon_spans [] (spans s) ->
  append_check vocab max_ctx (length (cache s)) (mem id (evicted s)) (live_ids s) (last_id s) id toks = None ->
  exists s' rows, append s id toks = Ok (s', rows).
Proof.
  intros HI s id toks Hc Hchk. pose proof (append_check_nonempty _ _ _ _ _ _ Hchk) as Hne.
  unfold operations.append. rewrite Hchk. unfold cache. rewrite (canon_cache _ _ Hc).
  destruct (forward (bstate s) (canon_from [] (tokens_of (spans s))) toks) as [st rows] eqn:Ef.
  assert (Hrows : rows = rows_of (tokens_of (spans s)) toks).
  { pose proof (HI (bstate s) (tokens_of (spans s)) toks) as H. now rewrite Ef in H. }
  subst rows. rewrite rows_of_length, Nat.eqb_refl. simpl.
  destruct (rev (rows_of (tokens_of (spans s)) toks)) as [|[kv lg] rr] eqn:Er.
  - apply (f_equal (@length _)) in Er. rewrite rev_length, rows_of_length in Er. destruct toks; [congruence|discriminate].
  - eexists. eexists. reflexivity.
Qed.

Lemma evict_ok : I1 -> forall s ids,
  canon_spans [] (spans s) -> evict_check ids (fun i => mem i (evicted s)) (live_ids s) = None ->
  exists s' st, evict s ids = Ok (s', st).
Proof.
  intros HI s ids Hc Hchk. unfold operations.evict. rewrite Hchk.
  set (pre := take_while (keep ids) (spans s)).
  assert (Hpre : canon_spans [] pre).
  { pose proof Hc as H. rewrite <- (take_drop (keep ids) (spans s)) in H. apply canon_spans_app in H. tauto. }
  destruct (tokens_of (filter (keep ids) (drop_while (keep ids) (spans s)))) as [|t ts] eqn:EX.
  - eexists. eexists. reflexivity.
  - rewrite <- EX. rewrite (canon_cache _ _ Hpre).
    destruct (forward _ _ _) as [st rows] eqn:Ef.
    assert (Hrows : rows = rows_of (tokens_of pre) (tokens_of (filter (keep ids) (drop_while (keep ids) (spans s))))).
    { pose proof (HI (bstate s) (tokens_of pre) (tokens_of (filter (keep ids) (drop_while (keep ids) (spans s))))) as H.
      now rewrite Ef in H. }
    rewrite Hrows, rows_of_length, Nat.eqb_refl. simpl. eexists. eexists. reflexivity.
Qed.

Lemma existsb_ext_in : forall (f g : nat -> bool) l, (forall i, In i l -> f i = g i) -> existsb f l = existsb g l.
Proof.
  induction l as [|a l IH]; intro H; simpl; [reflexivity|].
  rewrite (H a (or_introl eq_refl)). rewrite IH; [reflexivity|]. intros i Hi. apply H. now right.
Qed.

Lemma step_related : I1 -> forall S s1 s2 o,
  related S s1 s2 -> (forall i, In i (op_ids o) -> ~ In i S) ->
  snd (step s1 o) = snd (step s2 o) /\ related S (fst (step s1 o)) (fst (step s2 o)).
Proof.
  intros HI S s1 s2 o (Hc1 & Hc2 & Hl & He) Hids.
  assert (Hlen : length (cache s1) = length (cache s2)) by (rewrite !length_cache; now rewrite Hl).
  assert (Hlive : live_ids s1 = live_ids s2) by (rewrite !live_ids_spans; now rewrite Hl).
  assert (Hlast : last_id s1 = last_id s2) by (rewrite !last_id_live; now rewrite Hl).
  assert (Hmem : forall i, ~ In i S -> mem i (evicted s1) = mem i (evicted s2)).
  { intros i Hi. specialize (He i Hi). destruct (mem i (evicted s1)) eqn:E1; destruct (mem i (evicted s2)) eqn:E2;
      try reflexivity.
    - apply mem_In in E1. apply He in E1. apply mem_In in E1. congruence.
    - apply mem_In in E2. apply He in E2. apply mem_In in E2. congruence. }
  assert (Htok : tokens_of (spans s1) = tokens_of (spans s2)) by (rewrite !tokens_of_live; now rewrite Hl).
  destruct o as [id toks | ids]; simpl in Hids |- *.
  - assert (Hid : ~ In id S) by (apply Hids; now left).
    destruct (append_check vocab max_ctx (length (cache s1)) (mem id (evicted s1)) (live_ids s1) (last_id s1) id toks)
      eqn:Hchk.
    + assert (Hchk2 : append_check vocab max_ctx (length (cache s2)) (mem id (evicted s2)) (live_ids s2) (last_id s2) id toks = Some e)
        by (rewrite <- Hlen, <- Hlive, <- Hlast, <- (Hmem id Hid); exact Hchk).
      unfold operations.append. rewrite Hchk, Hchk2. simpl. split; [reflexivity|].
      split; [assumption|split; [assumption|split; [assumption|exact He]]].
    + assert (Hchk2 : append_check vocab max_ctx (length (cache s2)) (mem id (evicted s2)) (live_ids s2) (last_id s2) id toks = None)
        by (rewrite <- Hlen, <- Hlive, <- Hlast, <- (Hmem id Hid); exact Hchk).
      destruct (append_ok HI s1 id toks Hc1 Hchk) as (a & r1 & Ha).
      destruct (append_ok HI s2 id toks Hc2 Hchk2) as (b & r2 & Hb).
      rewrite Ha, Hb. simpl.
      destruct (append_spec HI s1 id toks a r1 Hc1 Ha) as (Hca & Hla & Hea & _ & Hr1).
      destruct (append_spec HI s2 id toks b r2 Hc2 Hb) as (Hcb & Hlb & Heb & _ & Hr2).
      split; [rewrite Hr1, Hr2, Htok; reflexivity|].
      split; [assumption|split; [assumption|split]].
      * rewrite Hla, Hlb, Hl. reflexivity.
      * intros i Hi. rewrite Hea, Heb. now apply He.
  - assert (Hchk_eq : evict_check ids (fun i => mem i (evicted s1)) (live_ids s1) =
                      evict_check ids (fun i => mem i (evicted s2)) (live_ids s2)).
    { unfold evict_check. rewrite Hlive.
      rewrite (existsb_ext_in (fun i => mem i (evicted s1)) (fun i => mem i (evicted s2)) ids); [reflexivity|].
      intros i Hi. apply Hmem. now apply Hids. }
    destruct (evict_check ids (fun i => mem i (evicted s1)) (live_ids s1)) eqn:Hchk.
    + assert (Hchk2 : evict_check ids (fun i => mem i (evicted s2)) (live_ids s2) = Some e)
        by (symmetry; exact Hchk_eq).
      unfold operations.evict. rewrite Hchk, Hchk2. simpl. split; [reflexivity|].
      split; [assumption|split; [assumption|split; [assumption|exact He]]].
    + destruct (evict_ok HI s1 ids Hc1 Hchk) as (a & st1 & Ha).
      destruct (evict_ok HI s2 ids Hc2 (eq_sym Hchk_eq)) as (b & st2 & Hb).
      rewrite Ha, Hb. simpl.
      destruct (evict_spec HI s1 ids a st1 Hc1 Ha) as (Hca & Hla & Hea & Hs1).
      destruct (evict_spec HI s2 ids b st2 Hc2 Hb) as (Hcb & Hlb & Heb & Hs2).
      split; [rewrite Hs1, Hs2, Hl; reflexivity|].
      split; [assumption|split; [assumption|split]].
      * rewrite Hla, Hlb, Hl. reflexivity.
      * intros i Hi. rewrite Hea, Heb, !in_app_iff. specialize (He i Hi). tauto.
Qed.

Lemma run_related : I1 -> forall S ops s1 s2,
  related S s1 s2 -> (forall o, In o ops -> forall i, In i (op_ids o) -> ~ In i S) ->
  snd (run s1 ops) = snd (run s2 ops) /\ related S (fst (run s1 ops)) (fst (run s2 ops)).
Proof.
  intros HI S ops. induction ops as [|o ops IH]; intros s1 s2 Hr Hops; simpl; [split; [reflexivity|exact Hr]|].
  destruct (step_related HI S s1 s2 o Hr (Hops o (or_introl eq_refl))) as (Ho & Hr').
  destruct (step s1 o) as [a out1] eqn:E1. destruct (step s2 o) as [b out2] eqn:E2. simpl in Ho, Hr'.
  destruct (IH a b Hr' (fun o' Ho' => Hops o' (or_intror Ho'))) as (Hrest & Hr'').
  destruct (run a ops) as [a' outs1]. destruct (run b ops) as [b' outs2]. simpl in *.
  split; [now rewrite Ho, Hrest|exact Hr''].
Qed.

Lemma related_observe : forall S s1 s2, related S s1 s2 ->
  observe (spans s1) = observe (spans s2) /\ table s1 = table s2 /\ next_logits s1 = next_logits s2.
Proof.
  intros S s1 s2 (Hc1 & Hc2 & Hl & _).
  assert (Ho : observe (spans s1) = observe (spans s2)) by (rewrite (canon_observe _ _ Hc1), (canon_observe _ _ Hc2); now rewrite Hl).
  split; [exact Ho|split].
  - unfold table. now apply table_live.
  - now apply next_logits_observe.
Qed.

Lemma nodupb_NoDup : forall l, NoDup l -> nodupb l = true.
Proof.
  induction l as [|a l IH]; intro H; simpl; [reflexivity|].
  inversion H; subst. rewrite (mem_false _ _ H2). simpl. now apply IH.
Qed.

Lemma NoDup_map_filter : forall {A B} (f : A -> B) (p : A -> bool) l, NoDup (map f l) -> NoDup (map f (filter p l)).
Proof.
  induction l as [|a l IH]; intro H; simpl; [constructor|].
  inversion H as [|? ? Hn Hd]; subst. destruct (p a); simpl; [|now apply IH].
  constructor; [|now apply IH]. intro Hin. apply Hn. apply in_map_iff in Hin. destruct Hin as (x & Hx & Hxl).
  apply filter_In in Hxl. apply in_map_iff. exists x. tauto.
Qed.

Lemma concat_filter_length : forall (p : nat * list nat -> bool) l,
  length (concat (map snd (filter p l))) <= length (concat (map snd l)).
Proof.
  induction l as [|a l IH]; simpl; [lia|]. destruct (p a); simpl; rewrite !app_length; lia.
Qed.

Lemma valid_filter : forall p C, valid_conv C -> valid_conv (filter p C).
Proof.
  intros p C (Hnd & Hf & Hl). split; [|split].
  - now apply NoDup_map_filter.
  - apply Forall_forall. intros x Hx. apply filter_In in Hx. rewrite Forall_forall in Hf. now apply Hf.
  - eapply Nat.le_trans; [apply concat_filter_length|exact Hl].
Qed.

Lemma build_empty : I1 -> forall st C, valid_conv C ->
  exists s, build (empty st) C = Ok s /\ canon_spans [] (spans s) /\ live_spans (spans s) = C /\
    evicted s = [] /\ written s = length (concat (map snd C)).
Proof.
  intros HI st C (Hnd & Hf & Hl).
  destruct (build_ok HI C (empty st) I Hnd Hf) as (s & Hb & Hc & Hls & He & Hw).
  - exact Hl.
  - intros id _. simpl. unfold live_ids. simpl. tauto.
  - exists s. split; [exact Hb|split; [exact Hc|split; [exact Hls|split; [exact He|exact Hw]]]].
Qed.

(** ** [E1] Evict equals never *)

(** For every conversation C akv accepts, every cache built from it (from any backend state)
    and every nonempty set S of distinct live span ids: evict(S) succeeds, the session built
    from C without S (same ids, from any backend state) exists, and the two have the same
    live spans, entries (token ids, K/V bytes, positions), span table and kept logits rows,
    hence the same next-token logits; and every later sequence of operations naming no id of
    S (appends, evictions) gives both the same outputs (logits rows, statistics, errors) and
    leaves them equal again. Under I1 of the backend. *)
Theorem E1_evict_eq_never : I1 ->
  forall st1 st2 C S s,
  valid_conv C -> S <> [] -> NoDup S -> incl S (map fst C) ->
  build (empty st1) C = Ok s ->
  exists s' stt n,
    evict s S = Ok (s', stt) /\
    build (empty st2) (filter (keep_live S) C) = Ok n /\
    observe (spans s') = observe (spans n) /\ table s' = table n /\ next_logits s' = next_logits n /\
    forall ops, (forall o, In o ops -> forall i, In i (op_ids o) -> ~ In i S) ->
      snd (run s' ops) = snd (run n ops) /\
      observe (spans (fst (run s' ops))) = observe (spans (fst (run n ops))) /\
      next_logits (fst (run s' ops)) = next_logits (fst (run n ops)).
Proof.
  intros HI st1 st2 C S s Hv HSne HSnd HSC Hb.
  destruct (build_empty HI st1 C Hv) as (s0 & Hb0 & Hc & Hl & He & _).
  rewrite Hb0 in Hb. injection Hb as <-.
  assert (Hchk : evict_check S (fun i => mem i (evicted s0)) (live_ids s0) = None).
  { unfold evict_check. destruct S as [|i0 S']; [congruence|].
    rewrite (nodupb_NoDup _ HSnd).
    assert (H1 : existsb (fun i => mem i (evicted s0)) (i0 :: S') = false).
    { apply Bool.not_true_iff_false. intro Hx. apply existsb_exists in Hx. destruct Hx as (i & _ & Hm).
      rewrite He in Hm. discriminate. }
    assert (H2 : existsb (fun i => negb (mem i (live_ids s0))) (i0 :: S') = false).
    { apply Bool.not_true_iff_false. intro Hx. apply existsb_exists in Hx. destruct Hx as (i & Hi & Hm).
      assert (Hin : In i (live_ids s0)) by (rewrite live_ids_spans, Hl; now apply HSC).
      apply mem_In in Hin. rewrite Hin in Hm. discriminate. }
    rewrite H1, H2. reflexivity. }
  destruct (evict_ok HI s0 S Hc Hchk) as (s' & stt & Hev).
  destruct (evict_spec HI s0 S s' stt Hc Hev) as (Hc' & Hl' & He' & _).
  destruct (build_empty HI st2 (filter (keep_live S) C) (valid_filter _ _ Hv)) as (n & Hbn & Hcn & Hln & Hen & _).
  assert (Hrel : related S s' n).
  { split; [assumption|split; [assumption|split]].
    - rewrite Hl', Hln, Hl. reflexivity.
    - intros i Hi. rewrite He', He, Hen. simpl. tauto. }
  exists s', stt, n. split; [exact Hev|]. split; [exact Hbn|].
  destruct (related_observe S s' n Hrel) as (Ho & Ht & Hn).
  split; [exact Ho|split; [exact Ht|split; [exact Hn|]]].
  intros ops Hops. destruct (run_related HI S ops s' n Hrel Hops) as (Hout & Hr).
  destruct (related_observe S _ _ Hr) as (Ho2 & _ & Hn2).
  split; [exact Hout|split; [exact Ho2|exact Hn2]].
Qed.


(** ** [E3] Prefix untouched *)

Lemma table_from_app : forall (a b : list (@span KV Lg)) st,
  table_from st (a ++ b) = table_from st a ++ table_from (st + length (entries_of a)) b.
Proof.
  induction a as [|sp a IH]; intros b st; simpl.
  - unfold entries_of. simpl. now rewrite Nat.add_0_r.
  - rewrite IH. unfold entries_of. simpl. rewrite app_length, Nat.add_assoc. reflexivity.
Qed.

Lemma table_from_in : forall (l : list (@span KV Lg)) st id st' len,
  In (id, st', len) (table_from st l) -> In id (map s_id l) /\ st <= st'.
Proof.
  induction l as [|sp l IH]; intros st id st' len H; simpl in H; [contradiction|].
  destruct H as [H|H].
  - injection H as <- <- _. simpl. split; [now left|lia].
  - destruct (IH _ _ _ _ H) as (Hi & Hle). simpl. split; [now right|lia].
Qed.

Lemma regroup_entries : forall surv (rows : list (KV * Lg)) w,
  length rows = length (tokens_of surv) ->
  length (entries_of (regroup surv rows w)) = length rows /\
  map e_serial (entries_of (regroup surv rows w)) = seq (S w) (length rows).
Proof.
  induction surv as [|sp surv IH]; intros rows w H; simpl.
  - unfold tokens_of, entries_of in H. simpl in H. destruct rows; [split; reflexivity|discriminate].
  - rewrite tokens_of_cons, app_length in H.
    set (n := length (s_entries sp)) in *.
    assert (Hn : length (span_tokens sp) = n) by apply span_tokens_length.
    assert (Hf : length (firstn n rows) = length (span_tokens sp)) by (rewrite firstn_length; lia).
    destruct (IH (skipn n rows) (w + n)) as (Hl & Hs); [rewrite skipn_length; lia|].
    unfold entries_of in *. simpl. rewrite app_length, map_app, Hl, Hs.
    rewrite (mk_entries_length _ _ _ Hf), (mk_entries_serials _ _ _ Hf).
    rewrite skipn_length, Hn.
    split; [lia|].
    transitivity (seq (S w) (n + (length rows - n))).
    + rewrite seq_app. reflexivity.
    + f_equal. lia.
Qed.

(** For every backend (no hypothesis), every eviction that succeeds: the entries before f,
    bytes and write serials, are those before the eviction; the cache's write counter grows by
    the reported count |X|, and the entries from f on are exactly |X| new writes (serials
    w + 1 ... w + |X|); f is the start of an evicted span and no evicted span starts before
    it. *)
Theorem E3_prefix_untouched : forall (s : session KV Lg BS) ids s' f gone nx,
  evict s ids = Ok (s', (f, gone, nx)) ->
  firstn f (cache s') = firstn f (cache s) /\ f <= length (cache s) /\
  length (cache s') = f + nx /\ written s' = written s + nx /\
  map e_serial (skipn f (cache s')) = seq (S (written s)) nx /\
  (exists id len, In id ids /\ In (id, f, len) (table s)) /\
  (forall id st len, In (id, st, len) (table s) -> In id ids -> f <= st).
Proof.
  intros s ids s' f gone nx He.
  unfold operations.evict in He.
  destruct (evict_check ids (fun i => mem i (evicted s)) (live_ids s)) eqn:Hchk; [discriminate|].
  set (pre := take_while (keep ids) (spans s)) in *.
  set (rest := drop_while (keep ids) (spans s)) in *.
  assert (Hsp : spans s = pre ++ rest) by (symmetry; apply take_drop).
  assert (Hcache : cache s = entries_of pre ++ entries_of rest) by (unfold cache; rewrite Hsp; apply entries_of_app).
  (* the table part does not depend on the branch *)
  assert (Hpre_keep : forall sp, In sp pre -> ~ In (s_id sp) ids).
  { intros sp Hin Hid. pose proof (take_while_all (keep ids) (spans s)) as Hall. fold pre in Hall.
    rewrite forallb_forall in Hall. specialize (Hall sp Hin). unfold keep in Hall.
    apply mem_In in Hid. rewrite Hid in Hall. discriminate. }
  assert (Hids_live : forall i, In i ids -> In i (live_ids s)).
  { intros i Hi. unfold evict_check in Hchk.
    destruct ids; [discriminate|]. destruct (negb (nodupb _)); [discriminate|].
    destruct (existsb _ _); [discriminate|].
    destruct (existsb (fun i0 => negb (mem i0 (live_ids s))) (n :: ids)) eqn:Ex; [discriminate|].
    apply mem_In. destruct (mem i (live_ids s)) eqn:Em; [reflexivity|].
    assert (existsb (fun i0 => negb (mem i0 (live_ids s))) (n :: ids) = true).
    { apply existsb_exists. exists i. rewrite Em. split; [exact Hi|reflexivity]. }
    congruence. }
  assert (Hne : ids <> []) by (intro H; rewrite H in Hchk; discriminate).
  assert (Htable : (exists id len, In id ids /\ In (id, length (entries_of pre), len) (table s)) /\
                   (forall id st len, In (id, st, len) (table s) -> In id ids -> length (entries_of pre) <= st)).
  { unfold table. rewrite Hsp, table_from_app. simpl. split.
    - destruct ids as [|i0 ids']; [congruence|].
      assert (Hl : In i0 (map s_id (spans s))) by (apply (Hids_live i0); now left).
      rewrite Hsp, map_app in Hl. apply in_app_or in Hl. destruct Hl as [Hl|Hl].
      + apply in_map_iff in Hl. destruct Hl as (sp & Hsid & Hsp'). exfalso. apply (Hpre_keep sp Hsp'). rewrite Hsid. now left.
      + destruct rest as [|sp0 rest'] eqn:Er; [contradiction|].
        assert (Hk : keep (i0 :: ids') sp0 = false).
        { clear -Er. unfold rest in Er. revert Er. generalize (spans s). induction l as [|a l IH]; simpl; [discriminate|].
          destruct (keep (i0 :: ids') a) eqn:Ek; [exact IH|]. intro H. injection H as -> _. exact Ek. }
        unfold keep in Hk. apply Bool.negb_false_iff, mem_In in Hk.
        exists (s_id sp0), (length (s_entries sp0)). split; [exact Hk|]. apply in_or_app. right. simpl. now left.
    - intros id st len Hin Hid. apply in_app_or in Hin. destruct Hin as [Hin|Hin].
      + apply table_from_in in Hin. destruct Hin as (Hin & _). apply in_map_iff in Hin. destruct Hin as (sp & Hsid & Hsp').
        exfalso. apply (Hpre_keep sp Hsp'). now rewrite Hsid.
      + apply table_from_in in Hin. lia. }
  assert (Hf0 : firstn (length (entries_of pre)) (entries_of pre ++ entries_of rest) = entries_of pre).
  { rewrite firstn_app, Nat.sub_diag, firstn_O, app_nil_r. apply firstn_all. }
  destruct (tokens_of (filter (keep ids) rest)) as [|t ts] eqn:EX.
  - injection He as <- <- <- <-. unfold cache in *. simpl. rewrite Hcache, Hf0, firstn_all.
    rewrite skipn_all, app_length, Nat.add_0_r. repeat split; try lia; apply Htable.
  - rewrite <- EX in He.
    destruct (forward _ _ _) as [st rows] eqn:Ef.
    destruct (length rows =? length (tokens_of (filter (keep ids) rest))) eqn:El; [|discriminate].
    apply Nat.eqb_eq in El. simpl in He.
    injection He as <- <- <- <-. unfold cache in *. simpl.
    destruct (regroup_entries (filter (keep ids) rest) rows (written s) El) as (Hl & Hs).
    rewrite entries_of_app, Hcache, Hf0.
    rewrite firstn_app, Nat.sub_diag, firstn_O, app_nil_r, firstn_all.
    rewrite skipn_app, Nat.sub_diag, skipn_O, skipn_all, app_nil_l.
    rewrite !app_length, Hl, El.
    split; [reflexivity|split; [lia|split; [lia|split; [reflexivity|split]]]].
    + rewrite Hs, El. reflexivity.
    + exact Htable.
Qed.


(** ** [E4] Cost *)

(** For a cache built from C: evicting S recomputes (writes) exactly |X| entries, X the
    tokens of the surviving spans after the first evicted one, and reports that count, the
    first evicted start f = |P| (P: the spans before it) and the evicted tokens; the session
    built from C without S from scratch writes |P| + |X|. Under I1 of the backend. *)
Theorem E4_cost : I1 ->
  forall st1 st2 C S s s' f gone nx,
  valid_conv C -> build (empty st1) C = Ok s -> evict s S = Ok (s', (f, gone, nx)) ->
  let P := take_while (keep_live S) C in
  let rest := drop_while (keep_live S) C in
  let X := filter (keep_live S) rest in
  f = length (concat (map snd P)) /\
  nx = length (concat (map snd X)) /\
  written s' = written s + nx /\
  gone = length (concat (map snd rest)) - nx /\
  exists n, build (empty st2) (filter (keep_live S) C) = Ok n /\ written n = f + nx.
Proof.
  intros HI st1 st2 C S s s' f gone nx Hv Hb He P rest X.
  destruct (build_empty HI st1 C Hv) as (s0 & Hb0 & Hc & Hl & _ & _).
  rewrite Hb0 in Hb. injection Hb as <-.
  destruct (evict_spec HI s0 S s' (f, gone, nx) Hc He) as (_ & _ & _ & Hst).
  rewrite Hl in Hst. unfold evict_stats in Hst. fold P rest X in Hst.
  injection Hst as Hf Hg Hx.
  destruct (E3_prefix_untouched s0 S s' f gone nx He) as (_ & _ & _ & Hw & _).
  destruct (build_empty HI st2 (filter (keep_live S) C) (valid_filter _ _ Hv)) as (n & Hbn & _ & _ & _ & Hwn).
  split; [exact Hf|split; [exact Hx|split; [exact Hw|split; [rewrite Hg, Hx; reflexivity|]]]].
  exists n. split; [exact Hbn|]. rewrite Hwn.
  assert (Hsplit : filter (keep_live S) C = P ++ X).
  { rewrite <- (take_drop (keep_live S) C) at 1. rewrite filter_app. fold P rest.
    f_equal. apply filter_all, take_while_all. }
  rewrite Hsplit, map_app, concat_app, app_length. lia.
Qed.

End Theorems.

(** I1 is not vacuous: a backend that computes each row from the tokens of the cache it reads
    and its new tokens (whatever it keeps in its hidden state) obeys it, for every kvf, lgf.
    So E1 and E4 are not conclusions drawn from an unsatisfiable premise. *)
Lemma I1_satisfiable : forall {KV Lg BS : Type} (kvf : list nat -> KV) (lgf : list nat -> Lg),
  I1 (fun (st : BS) (c : list (nat * KV)) toks => (st, rows_of kvf lgf (map fst c) toks)) kvf lgf.
Proof.
  intros KV Lg BS kvf lgf st pre toks. simpl. f_equal.
  assert (H : forall p, map fst (canon_from kvf p pre) = pre).
  { induction pre as [|t ts IH]; intro p; simpl; [reflexivity|]. now rewrite IH. }
  now rewrite H.
Qed.
