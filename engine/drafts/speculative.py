"""Speculative decoding inside the joint round: draft, verify, accept, roll back.

Decode on CPUs and laptops is bound by reading the weights once per forward, so checking a few
guessed tokens in the same forward costs much less than one forward each. Each round, a decoding
session may append drafted tokens (engine/drafts/lookup.py) after its last token; the joint
`llama_decode` returns logits for every one of those positions, and the reply takes them in order:

- each row is handled exactly as a plain step would handle it (the worker's `_after_forward`: the
  constraint's mask, the session's own sampler and seed, logprobs, stop tokens, max_tokens); the
  next row is used only while the token just sampled equals the draft that was fed after it.
  Sampling t ~ p and keeping the draft d when t == d accepts d with probability p(d), and on a
  miss t is distributed as p without d, renormalized: the usual rule for a one-hot draft. So the
  reply has the model's distribution, a greedy reply is the argmax chain, the sampler draws one
  number per token as without drafts (seeded sampled replies, which step alone, draft nothing),
  and a token the grammar forbids (masked to -inf) is never accepted;
- the cells of the rejected drafts leave the sequence (the backend's `trim`; llama.cpp's are retired,
  engine/backends/llamacpp_cells.py, so no neighbour's next token lands below its cells).

Adaptive, never a loss: a lookup draft's chance of being taken comes from the length of the match
that proposed it (a draft model's guess has its own), learned per engine and per reply
(engine/drafts/odds.py), and the engine keeps a running fit of what one more row costs a round
(probed once, engine/drafts/model_cost.py). A round gets a draft only where
the expected tokens gained beat the time it adds (the greedy rule below), never more than
MAX_DRAFT per session or ROUND_CAP per round, and while some session in the round drafts nothing,
never more than MAX_SLOWDOWN of that session's round time. Free chat, whose drafts rarely match,
soon drafts nothing and probes again now and then.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from .lookup import LookupIndex
from .model_cost import RowCost, probe_ratio, worth_asking
from .odds import MatchOdds, ReplyOdds

if TYPE_CHECKING:
    from ..steps import Job, RoundOwner, Slot

log = logging.getLogger(__name__)

MAX_DRAFT = 12
"""Most tokens drafted for one session in one round."""
ROUND_CAP = 32
"""Most drafted tokens in one round, all sessions together."""
MAX_SLOWDOWN = 1.25
"""While a session in the round drafts nothing, drafts may make the round at most this much longer."""
PRIOR_ACCEPT = 0.6
"""A new reply's assumed chance that a drafted token is accepted, before it has drafted."""
ACCEPT_WEIGHT = 0.15
"""Weight of each new verdict in a session's running acceptance estimate."""
RECOVER = 0.01
"""Per round without drafts, the estimate drifts this share back toward PRIOR_ACCEPT, so a session
whose drafts failed earlier tries again now and then (a reply may start quoting later)."""
MODEL_MIN_ACCEPT = 0.3
"""Below this running acceptance a session's drafts are not worth the draft model's forwards (the
estimate drifts back up, so it asks again now and then)."""
@dataclass
class DraftState:
    """One reply's drafting: its context's lookup index and how well its drafts have done."""

    index: LookupIndex
    indexed: int = 0
    """Generated tokens already in the index."""
    odds: ReplyOdds = field(default_factory=ReplyOdds)
    """How its lookup drafts have held, by match length."""
    match: int = 0
    """The match length behind this round's draft; 0 when the draft model guessed it (or none)."""
    accept: float = PRIOR_ACCEPT
    """A running share of its drafts taken (the draft model's guesses are asked by it)."""
    drafted: int = 0
    accepted: int = 0

    def verdict(self, drafted: int, accepted: int) -> None:
        """Update the estimate from one round: `accepted` leading drafts matched, the next (if any) did not.
        (The counts are kept by `Speculator.settle` as each draft is taken, before a reply's last
        token ends it and its stats are read.)"""
        for _ in range(accepted):
            self.accept += ACCEPT_WEIGHT * (1.0 - self.accept)
        if accepted < drafted:
            self.accept -= ACCEPT_WEIGHT * self.accept

    def idle(self) -> None:
        self.accept += RECOVER * (PRIOR_ACCEPT - self.accept)
        self.odds.forget(RECOVER)


class Speculator:
    """Plans each round's drafts and takes the verified tokens; one per joint-round worker."""

    def __init__(self, worker: "RoundOwner") -> None:
        self.worker = worker
        self.cost = RowCost()
        self.odds = MatchOdds()
        self.drafted = 0
        """Tokens drafted, all replies (the bench reads these)."""
        self.accepted = 0
        self._usable: Optional[bool] = None

    # -- which replies draft -----------------------------------------------------------------------
    def usable(self) -> bool:
        """Whether drafted cells can be removed again on this model: the backend says so, and once per
        engine a scratch sequence checks it (a hybrid recurrent model keeps what it was fed)."""
        backend = self.worker.backend
        if not getattr(self.worker.config, "speculative", True) or not getattr(backend, "can_draft", False):
            return False
        if self._usable is None:
            try:
                seq = backend.new_state()
            except Exception:  # every sequence is in use: ask again next round
                return False
            try:
                backend.step([(seq, [0, 0])])
                self._usable = bool(backend.trim(seq, 1)) and backend.held_tokens(seq) == 1
                if self._usable:  # what a row costs here, measured once (a few forwards)
                    self.cost.probed = probe_ratio(backend, seq)
            except Exception:
                log.exception("drafted tokens cannot be rolled back on this model; drafting is off")
                self._usable = False
            finally:
                backend.free_state(seq)
            if not self._usable:
                log.info("this model's state cannot drop its last tokens: speculative decoding is off")
        return self._usable

    def _state(self, job: "Job") -> Optional[DraftState]:
        if not job.params.speculative:
            return None
        state = job.drafter
        if state is None:
            state = job.drafter = DraftState(LookupIndex(job.prompt))
        new = job.generated[state.indexed:]
        state.index.extend(new)
        state.indexed += len(new)
        return state

    def _room(self, job: "Job", slot: "Slot") -> int:
        """Drafts that stay within the reply's max_tokens and the context (so within its reservation)."""
        left_tokens = job.params.max_tokens - len(job.generated) - 1
        left_context = self.worker.config.max_context - len(slot.fed) - 2
        return max(0, min(MAX_DRAFT, left_tokens, left_context))

    # -- planning ----------------------------------------------------------------------------------
    def plan(self, decoding: list[tuple["Job", "Slot", list[int]]], solo: list[tuple["Job", "Slot", list[int]]],
             others: int, room: int) -> None:
        """Append drafts to the feeds of `decoding` (stepped together with `others` prompt rows), in
        place, at most `room` tokens in all; `solo` (seeded replies, each in its own call) only count."""
        if not decoding or not self.usable():
            return
        free = self.worker.pool.tokens - self.worker.backend.held_tokens() if self.worker.pool else room
        # Seeded sampled replies (`solo`) draft nothing: a forward of several rows of one sequence gave
        # slightly other logits depending on where its cells sit in the shared pool (measured: the
        # same seed, another second token beside other sessions), and a seed promises the same text.
        free -= len(decoding) + others + len(solo)
        room = min(room, free, ROUND_CAP)
        if room <= 0 or not decoding:
            return
        ratio = self.cost.ratio()
        rows = len(decoding) + others
        # candidates: (chance the j-th draft is used, session index, its proposal)
        proposals: list[tuple[Any, list[int]]] = []
        candidates: list[tuple[float, int]] = []
        for job, slot, feed in decoding:
            state = self._state(job)
            proposals.append((state, self._propose(job, slot, state)))
        if getattr(self.worker, "draft_model", None) is not None:
            proposals = self._model_guesses(decoding, proposals, others)
        for i, (state, proposal) in enumerate(proposals):
            if proposal:
                candidates += [(p, i) for p in state.odds.chances(self.odds, state.match, len(proposal))]
        taken = self._allot(candidates, len(decoding), rows, ratio, room, limit=None)
        if len(decoding) > 1 and min(taken) == 0:  # a session drafts nothing: it may be slowed only so much
            taken = self._allot(candidates, len(decoding), rows, ratio, room, (1.0 + ratio * rows) * MAX_SLOWDOWN)
        for (job, slot, feed), (state, proposal), n in zip(decoding, proposals, taken):
            if n == 0 and state is not None:
                state.idle()
            feed.extend(proposal[:n])

    @staticmethod
    def _allot(candidates: list[tuple[float, int]], sessions: int, rows: int, ratio: float, room: int,
               limit: Optional[float]) -> list[int]:
        """Drafts per session, most likely first, while one more row adds more tokens than time
        ((tokens + p) / (time + ratio) > tokens / time), within `room` rows and a round time of `limit`."""
        taken = [0] * sessions
        tokens, time = float(sessions), 1.0 + ratio * rows
        for p, i in sorted(candidates, key=lambda c: -c[0]):
            if room <= 0 or p * time <= ratio * tokens or limit is not None and time + ratio > limit:
                break
            taken[i] += 1
            tokens, time, room = tokens + p, time + ratio, room - 1
        return taken

    def _propose(self, job: "Job", slot: "Slot", state: Optional[DraftState]) -> list[int]:
        if state is None:
            return []
        proposal, state.match = state.index.match(self._room(job, slot))
        if proposal and job.guide is not None:  # a draft the grammar forbids is not worth a row
            proposal = proposal[:job.guide.allows(proposal)]
        return proposal

    def _model_guesses(self, decoding: list[tuple["Job", "Slot", list[int]]],
                       proposals: list[tuple[Any, list[int]]], others: int) -> list[tuple[Any, list[int]]]:
        """The draft model's guesses (engine/drafts/draft_model.py) for the sessions whose drafts have
        been taken often enough, as many as its measured cost is worth (`worth_asking`). A lookup that
        starts with the same tokens and goes further is used instead: the model vouches for its start,
        the repeat for the rest."""
        model = self.worker.draft_model
        wants, accepts = [], []
        for (job, slot, feed), (state, proposal) in zip(decoding, proposals):
            if state is not None and state.accept >= MODEL_MIN_ACCEPT and not job.images:  # it reads text only
                k = min(self._room(job, slot), 1 + round(state.accept / (1.0 - state.accept)))
                if k > 0:
                    wants.append((job.session.id, slot.fed + feed[:1], k))
                    accepts.append(state.accept)
        if wants:
            depth = worth_asking(accepts, [k for _, _, k in wants], len(decoding) + others, len(decoding),
                                 self.cost, model.cost)
            wants = [(sid, context, min(k, depth)) for sid, context, k in wants] if depth else []
        guesses = model.propose(wants)
        out = []
        for (job, slot, feed), (state, proposal) in zip(decoding, proposals):
            guess = guesses.get(job.session.id, [])
            if guess and job.guide is not None:
                guess = guess[:job.guide.allows(guess)]
            agrees = guess and proposal[:len(guess)] == guess
            if guess and not agrees:
                state.match = 0
            out.append((state, proposal if agrees or not guess else guess))
        return out

    def observe(self, rows: int, seconds: float) -> None:
        """A decode round's size and time (rounds with a prompt chunk are not representative)."""
        self.cost.observe(rows, seconds)

    # -- verification ------------------------------------------------------------------------------
    def settle(self, job: "Job", slot: "Slot", feed: list[int], rows: Any) -> None:
        """Take `job`'s tokens from the logits `rows` of `feed` (its last token and its drafts): row i
        is used while the token sampled from row i-1 equals feed[i]. Then drop the rejected cells."""
        w, backend, state = self.worker, self.worker.backend, job.drafter
        drafts = len(feed) - 1
        accepted = judged = 0  # judged: drafts the model ruled on (a reply that ends leaves the rest)
        self.drafted += drafts
        if state is not None:
            state.drafted += drafts
        try:
            for i in range(len(feed)):
                w._after_forward(job, slot, [feed[i]], rows[i], backend.state_nbytes(slot.state))
                if slot.job is not job or i == drafts:
                    break
                judged += 1
                if job.generated[-1] != feed[i + 1]:
                    break
                accepted += 1
                self.accepted += 1
                if state is not None:
                    state.accepted += 1
        finally:
            extra = backend.held_tokens(slot.state) - len(slot.fed)
            if extra > 0 and not backend.trim(slot.state, extra):
                w.drop_state(slot)  # never keep cells the session does not own
                raise RuntimeError("the rejected drafted tokens could not be removed from the session's state")
            job.session._state_nbytes = backend.state_nbytes(slot.state)
            if state is not None:
                state.verdict(drafts, accepted)
                state.odds.learn(self.odds, state.match, judged, accepted)


def drafted(job: "Job", feed: list[int]) -> bool:
    """Whether a round's feed for `job` carries drafts (a decoding feed is otherwise one token)."""
    return not job.pending and len(feed) > 1

