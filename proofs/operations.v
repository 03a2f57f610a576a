(** * spec/operations.md: append (O2), evict (O3), logits (O4), errors (O6), as functions

    A backend (O1) is any function [forward] from its hidden state, the cache it reads (each
    entry's token and K/V, position = index) and m new tokens to its next hidden state and
    m rows (K/V, logits): it only computes; the session writes the rows into the cache,
    stamping each with the next write serial. Every operation checks its preconditions
    before it changes anything (O6): an error returns no session. *)

From Coq Require Import List Arith Bool Lia.
From Akv Require Import state.
Import ListNotations.

Inductive error :=
| EmptyInput | InvalidToken | ContextOverflow | SpanEvicted | SpanNotAtTail
| UnknownSpan | DuplicateSpan
| BackendFailure  (* the backend returned another number of rows than tokens *).

Inductive result (A : Type) := Ok (a : A) | Err (e : error).
Arguments Ok {A}.
Arguments Err {A}.

Section Operations.
Context {KV Lg BS : Type}.

(** [O1] The backend. *)
Variable forward : BS -> list (nat * KV) -> list nat -> BS * list (KV * Lg).
Variable vocab max_ctx : nat.

Definition mem (i : nat) (l : list nat) : bool := existsb (Nat.eqb i) l.

Fixpoint nodupb (l : list nat) : bool :=
  match l with
  | [] => true
  | i :: l' => negb (mem i l') && nodupb l'
  end.

Definition live_ids (s : session KV Lg BS) : list nat := map s_id (spans s).

Definition last_id (s : session KV Lg BS) : option nat :=
  match rev (spans s) with [] => None | sp :: _ => Some (s_id sp) end.

(** The rows written as entries, serials w + 1, w + 2, ... *)
Fixpoint mk_entries (toks : list nat) (rows : list (KV * Lg)) (w : nat) : list (@entry KV) :=
  match toks, rows with
  | t :: ts, (kv, _) :: rs => mk_entry t kv (S w) :: mk_entries ts rs (S w)
  | _, _ => []
  end.

(** The logits row of the last of [rows], or [default] when there is none. *)
Definition last_logits (rows : list (KV * Lg)) (default : Lg) : Lg :=
  match rev rows with [] => default | (_, lg) :: _ => lg end.

(** The recomputed rows of the surviving spans, regrouped span by span: each span gets as
    many rows as it has entries, its entries rewritten at their new positions with new
    serials, and its kept row (S3) the row of its last entry. *)
Fixpoint regroup (surv : list (@span KV Lg)) (rows : list (KV * Lg)) (w : nat) : list (@span KV Lg) :=
  match surv with
  | [] => []
  | sp :: rest =>
      let n := length (s_entries sp) in
      let r := firstn n rows in
      mk_span (s_id sp) (mk_entries (span_tokens sp) r w) (last_logits r (s_kept sp))
        :: regroup rest (skipn n rows) (w + n)
  end.

(** [O2] / [O6] append's preconditions, from what they read: the cache's size, whether the id
    is evicted, the live ids and the last one. *)
Definition append_check (size : nat) (was_evicted : bool) (live : list nat) (last : option nat)
    (id : nat) (toks : list nat) : option error :=
  if match toks with [] => true | _ => false end then Some EmptyInput
  else if existsb (fun t => vocab <=? t) toks then Some InvalidToken
  else if max_ctx <? size + length toks then Some ContextOverflow
  else if was_evicted then Some SpanEvicted
  else if mem id live && negb (match last with Some l => l =? id | None => false end)
  then Some SpanNotAtTail
  else None.

(** The live spans after appending [toks] to span [id]: the last span grows when it is [id]
    (decode), else a new span joins the tail. *)
Definition extend (sps : list (@span KV Lg)) (id : nat) (new : list (@entry KV)) (lg : Lg) : list (@span KV Lg) :=
  match rev sps with
  | last :: before =>
      if s_id last =? id then rev before ++ [mk_span id (s_entries last ++ new) lg]
      else sps ++ [mk_span id new lg]
  | [] => sps ++ [mk_span id new lg]
  end.

(** [O2] append(span, tokens): returns the session and the m logits rows. *)
Definition append (s : session KV Lg BS) (id : nat) (toks : list nat) : result (session KV Lg BS * list Lg) :=
  match append_check (length (cache s)) (mem id (evicted s)) (live_ids s) (last_id s) id toks with
  | Some e => Err e
  | None =>
      let '(st, rows) := forward (bstate s) (map content (cache s)) toks in
      if negb (length rows =? length toks) then Err BackendFailure
      else
        match rev rows with
        | [] => Err BackendFailure
        | (_, lg) :: _ =>
            Ok (mk_session (extend (spans s) id (mk_entries toks rows (written s)) lg) (evicted s)
                           (written s + length toks) st, map snd rows)
        end
  end.

Definition keep (ids : list nat) (sp : @span KV Lg) : bool := negb (mem (s_id sp) ids).

Fixpoint take_while {A} (p : A -> bool) (l : list A) : list A :=
  match l with [] => [] | a :: l' => if p a then a :: take_while p l' else [] end.
Fixpoint drop_while {A} (p : A -> bool) (l : list A) : list A :=
  match l with [] => [] | a :: l' => if p a then drop_while p l' else l end.

(** The statistics O3 returns: (truncated_at = f, tokens_evicted, tokens_recomputed = |X|). *)
Definition stats := (nat * nat * nat)%type.

(** [O3] evict(spans): f is the first evicted start; the cache is truncated to f, then the
    surviving spans after f are recomputed in one backend call at positions f, f + 1, ... *)
Definition evict_check (ids : list nat) (was_evicted : nat -> bool) (live : list nat) : option error :=
  if match ids with [] => true | _ => false end then Some EmptyInput
  else if negb (nodupb ids) then Some DuplicateSpan
  else if existsb was_evicted ids then Some SpanEvicted
  else if existsb (fun i => negb (mem i live)) ids then Some UnknownSpan
  else None.

Definition evict (s : session KV Lg BS) (ids : list nat) : result (session KV Lg BS * stats) :=
  match evict_check ids (fun i => mem i (evicted s)) (live_ids s) with
  | Some e => Err e
  | None =>
    let pre := take_while (keep ids) (spans s) in
    let rest := drop_while (keep ids) (spans s) in
    let surv := filter (keep ids) rest in
    let f := length (entries_of pre) in
    let X := tokens_of surv in
    let gone := length (entries_of rest) - length X in
    match X with
    | [] => Ok (mk_session pre (evicted s ++ ids) (written s) (bstate s), (f, gone, 0))
    | _ =>
        let '(st, rows) := forward (bstate s) (map content (entries_of pre)) X in
        if negb (length rows =? length X) then Err BackendFailure
        else Ok (mk_session (pre ++ regroup surv rows (written s)) (evicted s ++ ids)
                            (written s + length X) st, (f, gone, length X))
    end
  end.

(** A conversation appended span by span (one append per span), from session [s]. *)
Fixpoint build (s : session KV Lg BS) (conv : list (nat * list nat)) : result (session KV Lg BS) :=
  match conv with
  | [] => Ok s
  | (id, toks) :: rest =>
      match append s id toks with
      | Ok (s', _) => build s' rest
      | Err e => Err e
      end
  end.

(** A fresh session over a backend in state [st]. *)
Definition empty (st : BS) : session KV Lg BS := mk_session [] [] 0 st.

(** Later operations (E1's "further identical appends", and evictions too). *)
Inductive op := OpAppend (id : nat) (toks : list nat) | OpEvict (ids : list nat).

Inductive output := OutLogits (rows : list Lg) | OutStats (st : stats) | OutError (e : error).

Definition step (s : session KV Lg BS) (o : op) : session KV Lg BS * output :=
  match o with
  | OpAppend id toks =>
      match append s id toks with Ok (s', rows) => (s', OutLogits rows) | Err e => (s, OutError e) end
  | OpEvict ids =>
      match evict s ids with Ok (s', st) => (s', OutStats st) | Err e => (s, OutError e) end
  end.

(** Runs the operations in order; returns the final session and every output. *)
Fixpoint run (s : session KV Lg BS) (ops : list op) : session KV Lg BS * list output :=
  match ops with
  | [] => (s, [])
  | o :: rest => let '(s1, out) := step s o in let '(s2, outs) := run s1 rest in (s2, out :: outs)
  end.

End Operations.
