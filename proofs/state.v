(** * spec/state.md: the cache state (S1-S3), as an abstract model

    What a session holds, with every number that does not matter to E1-E4 left abstract:
    [KV] is one entry's K/V bytes over all layers (S1), [Lg] one logits row (S3). An entry's
    position is its index in the cache (S1); the cache counts the entries it writes and
    stamps each with its serial (the write serials of O5, the counter of E3 and E4).
    The span table (S2) is kept as the list of live spans in cache order, each with its
    entries: the tiling of S2 (the first span starts at 0, each where the previous ends, the
    last ends at n, every entry's span id is its span's) holds by construction, and
    [table] gives the (id, start, length) rows. *)

From Coq Require Import List Arith Lia.
Import ListNotations.

Section State.
Context {KV Lg : Type}.

(** [S1] An entry: its token id, its K/V, and the serial the cache gave its write. *)
Record entry := mk_entry { e_tok : nat; e_kv : KV; e_serial : nat }.

(** [S2] / [S3] A live span: its id, its entries in cache order, the logits row of its last
    entry as computed when that entry was last written. *)
Record span := mk_span { s_id : nat; s_entries : list entry; s_kept : Lg }.

(** What the cache holds per entry, without the serial: the token and the K/V bytes. *)
Definition content (e : entry) : nat * KV := (e_tok e, e_kv e).

Definition span_tokens (sp : span) : list nat := map e_tok (s_entries sp).

(** The cache: the entries of the live spans in order; entry i is at position i. *)
Definition entries_of (sps : list span) : list entry := concat (map s_entries sps).

Definition tokens_of (sps : list span) : list nat := map e_tok (entries_of sps).

(** [S2] The span table: (id, start, length) of each live span, in cache order. *)
Fixpoint table_from (start : nat) (sps : list span) : list (nat * nat * nat) :=
  match sps with
  | [] => []
  | sp :: rest => (s_id sp, start, length (s_entries sp)) :: table_from (start + length (s_entries sp)) rest
  end.

(** The live spans with their tokens: the conversation a session represents. *)
Definition live_spans (sps : list span) : list (nat * list nat) :=
  map (fun sp => (s_id sp, span_tokens sp)) sps.

(** What E1 compares: per live span in order, its id, its entries' tokens and K/V bytes
    (so positions, the table's starts and lengths), and its kept logits row. *)
Definition observe (sps : list span) : list (nat * list (nat * KV) * Lg) :=
  map (fun sp => (s_id sp, map content (s_entries sp), s_kept sp)) sps.

End State.

(** A session: its live spans (cache and table), the evicted set (S2), the cache's write
    counter, and the backend's hidden state (scratch, threads, ISA: whatever it keeps
    between calls, which I1 says the bits may not depend on). *)
Record session {KV Lg BS : Type} := mk_session {
  spans : list (@span KV Lg);
  evicted : list nat;
  written : nat;
  bstate : BS
}.
Arguments session : clear implicits.
Arguments mk_session {KV Lg BS}.

Section Derived.
Context {KV Lg BS : Type}.

Definition cache (s : session KV Lg BS) : list entry := entries_of (spans s).

Definition table (s : session KV Lg BS) : list (nat * nat * nat) := table_from 0 (spans s).

(** [O4] The next-token logits: the last span's kept row (none for an empty session). *)
Definition next_logits (s : session KV Lg BS) : option Lg :=
  match rev (spans s) with
  | [] => None
  | sp :: _ => Some (s_kept sp)
  end.

End Derived.

Lemma entries_of_app : forall {KV Lg} (a b : list (@span KV Lg)),
  entries_of (a ++ b) = entries_of a ++ entries_of b.
Proof. intros. unfold entries_of. now rewrite map_app, concat_app. Qed.

Lemma tokens_of_app : forall {KV Lg} (a b : list (@span KV Lg)),
  tokens_of (a ++ b) = tokens_of a ++ tokens_of b.
Proof. intros. unfold tokens_of. now rewrite entries_of_app, map_app. Qed.

Lemma tokens_of_cons : forall {KV Lg} (sp : @span KV Lg) sps,
  tokens_of (sp :: sps) = span_tokens sp ++ tokens_of sps.
Proof. intros. unfold tokens_of, entries_of, span_tokens. simpl. now rewrite map_app. Qed.
