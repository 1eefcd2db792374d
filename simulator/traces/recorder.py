"""Record attention/top-k traces: run a decoder step by step and write down, per decode step, layer and KV
head, what each selection policy would pick, plus record-time measurements that need the full attention
distribution (attention mass each selection captures, reuse, SnapKV recall, draft/target KL).

Two parts:
  * `StepRecorder` — backend-free bookkeeping in numpy. A model (the numpy llama2.c forward here, or the
    PyTorch model of lab/train_and_record.py) hands it per step the RAW SCORES below; it makes every selection,
    measures it and builds the AttentionTrace (simulator.traces.format).
  * `record_llama2c` — the CPU path: sample sequences from a llama2.c model (stories260K) from BOS and record.

Raw scores per decode step (T = KV length including the current token; G = query heads per KV head):
    probs     [L, Hkv, T]   the model's own attention of the current token, averaged over the G query heads
                            of each KV head (each row sums to 1): the "GQA-group attention"
    nsa_imp   [L, Hkv, T//B] NSA importance of each COMPLETE block of B tokens: softmax over blocks of
                            q . mean(K_block) / sqrt(d) per query head, summed over the group (NSA sec. 3.3.2:
                            compression keys, selection shared by the GQA group). ASSUMPTION: compression block
                            = stride = selection block = B (NSA uses l = 32, d = 16, l' = 64)
    page_scores [L, Hkv, ceil(T/N_L)]  Quest's min-max page score sum_i max(q_i kmax_i, q_i kmin_i) per
                            logical page of N_L tokens (the last page partial), max over the group's heads
                            (ASSUMPTION: Quest is MHA; a GQA group shares a page set by its max)
    tree_nsa_imp [L, Q, Hkv, T//B] (optional) nsa_imp of the Q rows of a speculative verification round
    draft_probs [Ld, Hkv_d, T] (optional) the draft model's GQA-group attention at the same step
    obs_votes [L, Hkv, P]   (once per sequence, at the prompt's end) SnapKV votes: the summed attention of the
                            last `snap_obs` prompt tokens over the prompt, group-summed (SnapKV Eq. 1)

Policies (what each selection is, in `meta.policies`):
    topk      exact token top-k of probs (DSA-style), nested tiers k in `topk_tiers`
    nsa       NSA block top-n: the `nsa_initial` first and `nsa_local` last blocks forced, then the best
              complete blocks by nsa_imp, n = `nsa_top_n` in all (NSA paper sec. 3.3.2, "1 initial + 2 local")
    nsa_tree  the same for every row of a speculative round (query axis = tree node; row 0 = the root)
    quest     top pages by page_scores at `page_budget` tokens (N_L-token pages), the current page forced
    lserve    LServe hierarchical paging: physical page score = max of its N_P/N_L logical pages' scores,
              top physical pages at the same token budget, the current page forced (LServe sec. 3.5.2)
SnapKV (sink + top-K of the avg-pooled votes among [sink, P - recent) + a rolling recent window) and
StreamingLLM (sink + window) are recorded as measurements only (their selections are fixed or made once).
"""
from __future__ import annotations

import datetime as _dt
import math
from dataclasses import asdict, dataclass, field

import numpy as np

from simulator.traces.format import FORMAT, VERSION, AttentionTrace, Selection

EPS = 1e-30
#: optional meta.model keys carried into a trace when the model dict has them (simulator/traces/format.py)
OPTIONAL_MODEL_KEYS = ("layer_ids", "model_layers", "arch", "sliding_window", "quantization")


@dataclass
class RecordConfig:
    """Policy parameters of one recording (every value lands in meta.json)."""

    topk_tiers: tuple[int, ...] = (8, 16, 32, 64)
    nsa_block: int = 16
    nsa_top_n: int = 8
    nsa_initial: int = 1
    nsa_local: int = 2
    page_logical: int = 4
    page_physical: int = 16
    page_budget: int = 64
    sink: int = 4
    window: int = 64
    snap_obs: int = 16
    snap_pool: int = 7
    snap_budgets: tuple[int, ...] = (8, 16, 32)
    snap_recent: int = 16
    step_lags: int = 16
    layer_lags: int = 4
    gvr_every: int = 0            # 0: no full score rows kept; n: keep rows every n-th step
    gvr_max_steps: int = 4        # at most this many steps' rows per trace
    gvr_k: int | None = None      # k of the previous top-k kept with each gvr row (None: the largest tier)
    topp: tuple[float, ...] = (0.9, 0.95, 0.97, 0.99)
    local_tokens: int = 64
    sink_tokens: int = 4
    tree_parent: tuple[int, ...] | None = None   # verification rows of nsa_tree (row 0 = root, parent -1)
    chain_k: int = 0              # draft tokens per acceptance round (0: no acceptance recorded)
    notes: dict = field(default_factory=dict)

    def check(self) -> None:
        if list(self.topk_tiers) != sorted(set(self.topk_tiers)) or self.topk_tiers[0] < 1:
            raise ValueError("topk_tiers must be strictly increasing positive integers")
        if self.page_physical % self.page_logical:
            raise ValueError("page_physical must be a multiple of page_logical")
        if self.gvr_k is not None and not 1 <= self.gvr_k <= self.topk_tiers[-1]:
            raise ValueError("gvr_k must lie in [1, largest tier] (the previous step's top-gvr_k is a prefix of its "
                             "ranking)")
        if self.tree_parent is not None and (self.tree_parent[0] != -1 or
                                             any(not 0 <= p < i for i, p in enumerate(self.tree_parent) if i)):
            raise ValueError("tree_parent: row 0 is the root (-1), every other row's parent is an earlier row")


# ---- raw scores from queries and keys (numpy; lab/train_and_record.py has the same three in PyTorch) ----------
def group_mean(p: np.ndarray, kv_heads: int) -> np.ndarray:
    """[..., H, T] per-query-head attention -> [..., Hkv, T] mean over each KV head's group."""
    *lead, H, T = p.shape
    return p.reshape(*lead, kv_heads, H // kv_heads, T).mean(axis=-2)


def nsa_importance(q: np.ndarray, K: np.ndarray, block: int) -> np.ndarray:
    """q [R, H, d], K [Hkv, T, d] -> [R, Hkv, T // block]: softmax over complete blocks of q . mean(K_block)
    / sqrt(d), summed over each group's heads."""
    R, H, d = q.shape
    Hkv, T, _ = K.shape
    nbc = T // block
    if nbc == 0:
        return np.zeros((R, Hkv, 0), np.float32)
    Kc = K[:, :nbc * block].reshape(Hkv, nbc, block, d).mean(axis=2)          # [Hkv, nbc, d]
    Kc = np.repeat(Kc, H // Hkv, axis=0)                                       # [H, nbc, d]
    s = np.einsum("rhd,hbd->rhb", q, Kc) / math.sqrt(d)
    s = np.exp(s - s.max(axis=-1, keepdims=True))
    s /= s.sum(axis=-1, keepdims=True)
    return s.reshape(R, Hkv, H // Hkv, nbc).sum(axis=2)


def page_scores(q: np.ndarray, K: np.ndarray, page: int) -> np.ndarray:
    """q [R, H, d], K [Hkv, T, d] -> [R, Hkv, ceil(T/page)]: Quest's sum_i max(q_i kmax_i, q_i kmin_i), max over
    each group's heads. The last (partial) page uses the tokens it has."""
    R, H, d = q.shape
    Hkv, T, _ = K.shape
    npg = -(-T // page)
    pad = npg * page - T
    Kp = np.pad(K, ((0, 0), (0, pad), (0, 0)), mode="edge")                  # edge pad: min/max unchanged
    Kp = Kp.reshape(Hkv, npg, page, d)
    kmax, kmin = Kp.max(axis=2), Kp.min(axis=2)                                # [Hkv, npg, d]
    kmax = np.repeat(kmax, H // Hkv, axis=0)
    kmin = np.repeat(kmin, H // Hkv, axis=0)
    s = np.maximum(q[:, :, None, :] * kmax[None], q[:, :, None, :] * kmin[None]).sum(-1)   # [R, H, npg]
    return s.reshape(R, Hkv, H // Hkv, npg).max(axis=2)


# ---- helpers -------------------------------------------------------------------------------------------
def _topn(scores: np.ndarray, n: int) -> np.ndarray:
    """Indices of the n largest along the last axis, sorted ascending (n <= size)."""
    if n >= scores.shape[-1]:
        return np.broadcast_to(np.arange(scores.shape[-1]), scores.shape).copy()
    idx = np.argpartition(-scores, n - 1, axis=-1)[..., :n]
    return np.sort(idx, axis=-1)


def _unit_mass(P: np.ndarray, size: int, units: int) -> np.ndarray:
    """[..., T] token mass -> [..., units] mass per unit of `size` tokens."""
    T = P.shape[-1]
    pad = units * size - T
    Pp = np.concatenate([P, np.zeros(P.shape[:-1] + (pad,), P.dtype)], axis=-1) if pad else P
    return Pp.reshape(P.shape[:-1] + (units, size)).sum(-1)


def _forced_top(scores_complete: np.ndarray, total_units: int, n: int, initial: int, local: int) -> np.ndarray:
    """Top-n units among `total_units`: the first `initial` and last `local` forced, the rest by score (units
    without a score, i.e. incomplete ones, only when forced)."""
    lead = scores_complete.shape[:-1]
    s = np.full(lead + (total_units,), -np.inf, dtype=np.float64)
    s[..., :scores_complete.shape[-1]] = scores_complete
    big = 1e30
    s[..., :min(initial, total_units)] = big
    s[..., max(0, total_units - local):] = big
    n = min(n, total_units)
    return _topn(np.where(np.isfinite(s), s, -1e300), n)


def traversal_orders(parent: list[int], score: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Orders of a verification round's rows (row 0 = root): bfs (level by level, children in creation
    order), dfs (pre-order), position_sorted (by depth, i.e. token position, then by the node's draft score
    descending; ASSUMPTION: the SSV document names the order without defining ties)."""
    Q = len(parent)
    children: list[list[int]] = [[] for _ in range(Q)]
    depth = np.zeros(Q, np.int64)
    for i in range(1, Q):
        children[parent[i]].append(i)
        depth[i] = depth[parent[i]] + 1
    bfs, frontier = [0], [0]
    while frontier:
        nxt = [c for p in frontier for c in children[p]]
        bfs += nxt
        frontier = nxt
    dfs: list[int] = []
    stack = [0]
    while stack:
        n = stack.pop()
        dfs.append(n)
        stack.extend(reversed(children[n]))
    sc = np.zeros(Q) if score is None else np.asarray(score, dtype=np.float64)
    pos = sorted(range(Q), key=lambda i: (depth[i], -sc[i], i))
    return {"bfs": np.array(bfs), "dfs": np.array(dfs), "position_sorted": np.array(pos)}


class StepRecorder:
    """Collects selections and measurements step by step (see the module docstring)."""

    def __init__(self, cfg: RecordConfig, model: dict, draft_model: dict | None = None):
        cfg.check()
        self.cfg = cfg
        self.model = model
        self.draft = draft_model
        self.L = int(model["layers"])
        self.H = int(model["kv_heads"])
        self.positions: list[int] = []
        self.step_index: list[int] = []
        self.sel: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray | None]]] = {
            "topk": [], "nsa": [], "quest": [], "lserve": []}
        if cfg.tree_parent is not None:
            self.sel["nsa_tree"] = []
        self.m: dict[str, list] = {k: [] for k in (
            "mass_topk", "prevmass_topk", "mass_nsa", "reuse_nsa", "mass_quest", "mass_lserve", "inflation_lserve",
            "reuse_lserve", "mass_streaming", "snapkv_recall", "sink_mass", "local_mass", "entropy_bits")}
        if cfg.tree_parent is not None:
            self.m["tree_score"] = []
        if draft_model is not None:
            for k in ("specattn_kl", "specattn_kept", "specattn_mass", "specattn_agree"):
                self.m[k] = []
        if cfg.chain_k:
            self.m["tree_accepted"] = []
        self.accepted: list[int] = []
        self.gvr_rows: list[np.ndarray] = []
        self.gvr_prev: list[np.ndarray] = []
        self.gvr_key: list[tuple[int, int, int]] = []
        self.gvr_steps = 0
        self.seq = -1
        self.prompt_tokens: list[int] = []

    # ---- per sequence -------------------------------------------------------------------------------
    def begin_sequence(self, prompt_len: int, obs_votes: np.ndarray) -> None:
        """Start a sequence whose prompt has `prompt_len` tokens; obs_votes [L, Hkv, P] (SnapKV)."""
        c = self.cfg
        self.seq += 1
        self.step_no = 0
        self.prompt_tokens.append(prompt_len)
        self.prev_top = None
        self.ring: list[tuple[int, np.ndarray]] = []       # (T, lserve selection [L, Hkv, n]) newest first
        P = prompt_len
        lo, hi = c.sink, max(c.sink, P - c.snap_recent)
        votes = np.asarray(obs_votes, dtype=np.float64)[..., lo:hi]
        if votes.shape[-1] and c.snap_pool > 1:   # SnapKV: avg_pool1d(kernel, stride 1, padding kernel // 2)
            k = c.snap_pool
            pad = np.pad(votes, [(0, 0)] * (votes.ndim - 1) + [(k // 2, k // 2)])
            cs = np.cumsum(pad, axis=-1)
            cs = np.concatenate([np.zeros(cs.shape[:-1] + (1,)), cs], axis=-1)
            votes = (cs[..., k:] - cs[..., :-k]) / k
        self.snap_sel = [(_topn(votes, min(b, votes.shape[-1])) + lo) if votes.shape[-1] else
                         np.zeros(votes.shape[:-1] + (0,), np.int64) for b in c.snap_budgets]

    # ---- per step ------------------------------------------------------------------------------------
    def step(self, probs: np.ndarray, nsa_imp: np.ndarray, page_sc: np.ndarray, *, tree_nsa_imp=None,
             tree_score=None, draft_probs=None, accepted: int | None = None, tree_accepted: int | None = None):
        c = self.cfg
        P = np.asarray(probs, dtype=np.float64)
        L, H, T = P.shape
        assert (L, H) == (self.L, self.H), (L, H)
        self.positions.append(T)
        self.step_index.append(self.seq * 1_000_000 + self.step_no)
        consecutive = self.prev_top is not None
        # -- token top-k (tiers)
        tiers = np.array(c.topk_tiers)
        kk = min(int(tiers[-1]), T)
        idx = np.argpartition(-P, kk - 1, axis=-1)[..., :kk] if kk < T else np.broadcast_to(np.arange(T), (L, H, T))
        vals = np.take_along_axis(P, idx, -1)
        order = np.argsort(-vals, axis=-1, kind="stable")
        ranked = np.take_along_axis(idx, order, -1)                                # by score, best first
        rvals = np.take_along_axis(vals, order, -1)
        tier_of_rank = np.searchsorted(tiers, np.arange(kk), side="right").astype(np.uint8)
        by_pos = np.argsort(ranked, axis=-1)
        self._add_sel("topk", np.take_along_axis(ranked, by_pos, -1), tier=tier_of_rank[by_pos])
        cs = np.cumsum(rvals, axis=-1)
        self.m["mass_topk"].append(cs[..., np.minimum(tiers, kk) - 1])
        if consecutive:
            pm = []
            for t in tiers:
                pr = self.prev_top[..., :min(int(t), self.prev_top.shape[-1])]
                pm.append(np.take_along_axis(P, pr, -1).sum(-1))
            self.m["prevmass_topk"].append(np.stack(pm, -1))
        else:
            self.m["prevmass_topk"].append(np.full((L, H, len(tiers)), np.nan))
        # full rows for GVR replay: this step's log-scores and the previous step's top-gvr_k (default: largest tier)
        gk = int(c.gvr_k or tiers[-1])
        if (c.gvr_every and consecutive and self.step_no % c.gvr_every == 0 and self.gvr_steps < c.gvr_max_steps
                and self.prev_top.shape[-1] >= gk):
            self.gvr_steps += 1
            for layer in range(L):
                for h in range(H):
                    self.gvr_rows.append(np.log(P[layer, h] + EPS).astype(np.float16))
                    self.gvr_prev.append(self.prev_top[layer, h, :gk].astype(np.int32))
                    self.gvr_key.append((len(self.positions) - 1, layer, h))
        self.prev_top = ranked
        # -- NSA blocks (decode row)
        B = c.nsa_block
        nb = -(-T // B)
        nsel = _forced_top(np.asarray(nsa_imp, np.float64), nb, c.nsa_top_n, c.nsa_initial, c.nsa_local)
        self._add_sel("nsa", nsel)
        bm = _unit_mass(P, B, nb)                                                  # [L, H, nb]
        own = np.take_along_axis(bm, nsel, -1).sum(-1)
        self.m["mass_nsa"].append(own)
        reuse = np.full((L, H, c.layer_lags), np.nan)
        for lag in range(1, c.layer_lags + 1):
            if lag < L:
                got = np.take_along_axis(bm[lag:], nsel[:L - lag], -1).sum(-1)
                reuse[:L - lag, :, lag - 1] = got / np.maximum(own[lag:], EPS)
        self.m["reuse_nsa"].append(reuse)
        if c.tree_parent is not None:
            ti = np.asarray(tree_nsa_imp, np.float64)                               # [L, Q, H, nbc]
            tsel = _forced_top(ti, nb, c.nsa_top_n, c.nsa_initial, c.nsa_local)     # [L, Q, H, n]
            self._add_sel("nsa_tree", np.transpose(tsel, (0, 2, 1, 3)))
            self.m["tree_score"].append(np.asarray(tree_score, np.float64))
        # -- Quest (flat logical pages) and LServe (hierarchical)
        NL, NP, bud = c.page_logical, c.page_physical, c.page_budget
        npl, npp = -(-T // NL), -(-T // NP)
        g = NP // NL
        sc = np.asarray(page_sc, np.float64)
        qsel = _forced_top(sc, npl, max(1, bud // NL), 0, 1)
        self._add_sel("quest", qsel)
        lm = _unit_mass(P, NL, npl)
        self.m["mass_quest"].append(np.take_along_axis(lm, qsel, -1).sum(-1))
        scp = np.concatenate([sc, np.full((L, H, npp * g - npl), -np.inf)], -1).reshape(L, H, npp, g).max(-1)
        lsel = _forced_top(scp, npp, max(1, bud // NP), 0, 1)
        self._add_sel("lserve", lsel)
        pmass = _unit_mass(P, NP, npp)
        lmass = np.take_along_axis(pmass, lsel, -1).sum(-1)
        self.m["mass_lserve"].append(lmass)
        ntop = min(max(1, bud // NL), npl)
        toplog = _topn(sc, ntop) // g
        distinct = 1 + (np.diff(np.sort(toplog, -1), axis=-1) > 0).sum(-1)
        self.m["inflation_lserve"].append(distinct / max(1.0, min(bud // NP, npp)))
        if not consecutive:
            self.ring = []
        self.ring.insert(0, (T, lsel))
        self.ring = self.ring[:c.step_lags]
        rl = np.full((L, H, c.step_lags), np.nan)
        for lag, (T_old, sel_old) in enumerate(self.ring):
            newstart = (T_old - 1) // NP
            rl[..., lag] = np.take_along_axis(pmass, sel_old, -1).sum(-1) + pmass[..., newstart + 1:].sum(-1)
        self.m["reuse_lserve"].append(rl)
        # -- StreamingLLM, SnapKV, attention shape
        sink = P[..., :c.sink].sum(-1)
        self.m["mass_streaming"].append(sink + P[..., max(c.sink, T - c.window):].sum(-1))
        recent = P[..., max(c.sink, T - c.snap_recent):].sum(-1)
        base = P[..., :c.sink].sum(-1) + recent
        self.m["snapkv_recall"].append(np.stack([base + np.take_along_axis(P, s, -1).sum(-1) if s.shape[-1] else base
                                                 for s in self.snap_sel], -1))
        self.m["sink_mass"].append(P[..., :c.sink_tokens].sum(-1))
        self.m["local_mass"].append(P[..., -c.local_tokens:].sum(-1))
        self.m["entropy_bits"].append(-(P * np.log2(P + EPS)).sum(-1))
        # -- SpecAttn: draft vs target
        if self.draft is not None:
            Ad = np.asarray(draft_probs, np.float64).mean(axis=1)                    # [Ld, T]
            At = P.mean(axis=1)                                                      # [L, T]
            Ad = Ad / Ad.sum(-1, keepdims=True)
            ent = (At * np.log(At + EPS)).sum(-1)                                    # [L]
            self.m["specattn_kl"].append(ent[None, :] - np.log(Ad + EPS) @ At.T)    # [Ld, L]
            o = np.argsort(-Ad, axis=-1)
            csd = np.cumsum(np.take_along_axis(Ad, o, -1), -1)
            n_p = np.stack([np.minimum((csd < p).sum(-1) + 1, T) for p in c.topp], -1)   # [Ld, np]
            self.m["specattn_kept"].append(n_p / T)
            Ats = np.stack([At[:, o[i]] for i in range(Ad.shape[0])], 0)               # [Ld, L, T] in draft order
            cst = np.cumsum(Ats, -1)
            self.m["specattn_mass"].append(np.take_along_axis(cst, (n_p - 1)[:, None, :].repeat(L, 1), -1))
            k = min(int(tiers[min(1, len(tiers) - 1)]), T)
            md = np.zeros((Ad.shape[0], T))
            np.put_along_axis(md, np.argpartition(-Ad, k - 1, -1)[:, :k], 1.0, -1)
            mt = np.zeros((L, T))
            np.put_along_axis(mt, np.argpartition(-At, k - 1, -1)[:, :k], 1.0, -1)
            inter = md @ mt.T
            self.m["specattn_agree"].append(inter / (2 * k - inter))
        if c.chain_k:
            self.accepted.append(int(accepted))
            self.m["tree_accepted"].append(np.int16(-1 if tree_accepted is None else tree_accepted))
        self.step_no += 1

    def _add_sel(self, name, idx: np.ndarray, tier: np.ndarray | None = None) -> None:
        """idx [L, H, n] or [L, H, Q, n], sorted ascending along the last axis."""
        idx = np.asarray(idx)
        if idx.ndim == 3:
            idx = idx[:, :, None, :]
        counts = np.full(idx.shape[:3], idx.shape[-1], dtype=np.int64)
        t = None if tier is None else np.asarray(tier).reshape(-1).astype(np.uint8)
        self.sel[name].append((counts, idx.reshape(-1).astype(np.int64), t))

    # ---- build -------------------------------------------------------------------------------------------
    def finish(self, *, name: str, source: str, script: str, how: str, seed: int, provenance: str,
               device: str = "cpu", date: str | None = None, extra_meta: dict | None = None) -> AttentionTrace:
        c = self.cfg
        S = len(self.positions)
        sels, pol = {}, {}
        bs = {"topk": 1, "nsa": c.nsa_block, "nsa_tree": c.nsa_block, "quest": c.page_logical,
              "lserve": c.page_physical}
        kinds = {"topk": "token_topk", "nsa": "block_topn", "nsa_tree": "block_topn", "quest": "page_topk",
                 "lserve": "page_topk"}
        ks = {"topk": int(c.topk_tiers[-1]), "nsa": c.nsa_top_n, "nsa_tree": c.nsa_top_n,
              "quest": max(1, c.page_budget // c.page_logical), "lserve": max(1, c.page_budget // c.page_physical)}
        meanings = {
            "topk": "exact token top-k of the GQA-group attention (DSA-style); tiers = nested k",
            "nsa": "NSA block top-n over mean-pooled compressed keys, first/last blocks forced",
            "nsa_tree": "NSA block top-n of every row of a speculative verification round (query = tree node)",
            "quest": "Quest min-max page top-k (logical pages) at the token budget, current page forced",
            "lserve": "LServe hierarchical paging: physical pages ranked by max logical min-max score",
        }
        params = {
            "topk": {"tiers": list(c.topk_tiers)},
            "nsa": {"block": c.nsa_block, "top_n": c.nsa_top_n, "initial": c.nsa_initial, "local": c.nsa_local},
            "quest": {"page": c.page_logical, "budget_tokens": c.page_budget},
            "lserve": {"logical": c.page_logical, "physical": c.page_physical, "budget_tokens": c.page_budget},
        }
        if c.tree_parent is not None:
            params["nsa_tree"] = dict(params["nsa"], tree_parent=list(c.tree_parent))
        for nm, parts in self.sel.items():
            counts = np.concatenate([p[0][None] for p in parts], 0) if parts else np.zeros((0, self.L, self.H, 1))
            flat = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.int64)
            tier = np.concatenate([p[2] for p in parts]) if parts and parts[0][2] is not None else None
            sels[nm] = Selection(nm, kinds[nm], "token" if nm == "topk" else ("block" if "nsa" in nm else "page"),
                                 bs[nm], ks[nm], list(c.topk_tiers) if nm == "topk" else None,
                                 counts.astype(np.int64), flat, tier, None, params.get(nm, {}), meanings[nm])
            pol[nm] = {"kind": kinds[nm], "unit": sels[nm].unit, "block_size": bs[nm], "k": ks[nm],
                       "queries": int(counts.shape[3]) if counts.ndim == 4 else 1,
                       "tiers": list(c.topk_tiers) if nm == "topk" else None, "scores": False,
                       "params": params.get(nm, {}), "meaning": meanings[nm]}
        coords = {"k": list(c.topk_tiers), "layer_lag": list(range(1, c.layer_lags + 1)),
                  "step_lag": list(range(c.step_lags)), "budget": list(c.snap_budgets), "p": list(c.topp)}
        if self.draft is not None:
            coords["draft_layer"] = list(range(int(self.draft["layers"])))
        mdesc = {
            "mass_topk": (["step", "layer", "kv_head", "k"], "attention mass captured by the top-k tier"),
            "prevmass_topk": (["step", "layer", "kv_head", "k"], "mass at this step captured by the previous step's "
                              "top-k tier (NaN: no previous step)"),
            "mass_nsa": (["step", "layer", "kv_head"], "mass captured by the NSA block selection"),
            "reuse_nsa": (["step", "layer", "kv_head", "layer_lag"], "mass of layer l+lag captured by layer l's NSA "
                          "selection / by its own"),
            "mass_quest": (["step", "layer", "kv_head"], "mass captured by Quest pages"),
            "mass_lserve": (["step", "layer", "kv_head"], "mass captured by LServe physical pages"),
            "inflation_lserve": (["step", "layer", "kv_head"], "distinct physical pages of the top logical pages / "
                                 "(budget / N_P)"),
            "reuse_lserve": (["step", "layer", "kv_head", "step_lag"], "mass captured by the LServe selection made "
                             "step_lag steps earlier (+ pages of tokens generated since); NaN: not recorded"),
            "mass_streaming": (["step", "layer", "kv_head"], "mass on sink + window tokens"),
            "snapkv_recall": (["step", "layer", "kv_head", "budget"], "mass on sink + SnapKV top-K + recent window"),
            "sink_mass": (["step", "layer", "kv_head"], "mass on the first sink_tokens tokens"),
            "local_mass": (["step", "layer", "kv_head"], "mass on the last local_tokens tokens"),
            "entropy_bits": (["step", "layer", "kv_head"], "entropy of the GQA-group attention"),
            "tree_score": (["step", "query"], "draft log-probability of each verification row's path (root 0)"),
            "specattn_kl": (["step", "draft_layer", "layer"], "KL(A_target || A_draft) of head-mean attention"),
            "specattn_kept": (["step", "draft_layer", "p"], "tokens kept by the draft layer's top-p / context"),
            "specattn_mass": (["step", "draft_layer", "layer", "p"], "target mass captured by the draft's top-p"),
            "specattn_agree": (["step", "draft_layer", "layer"], "Jaccard of draft and target top-k (k = 2nd tier)"),
            "tree_accepted": (["step"], "accepted depth of the verification tree (greedy), -1: not recorded"),
        }
        measures, mmeta = {}, {}
        for nm, vals in self.m.items():
            if not vals:
                continue
            arr = np.stack([np.asarray(v) for v in vals], 0)
            measures[nm] = arr.astype(np.int16 if nm == "tree_accepted" else np.float16)
            mmeta[nm] = {"axes": mdesc[nm][0], "unit": "count" if nm == "tree_accepted" else "fraction",
                         "meaning": mdesc[nm][1]}
        if self.gvr_rows:
            width = max(len(r) for r in self.gvr_rows)
            rows = np.full((len(self.gvr_rows), width), np.nan, np.float16)
            for i, r in enumerate(self.gvr_rows):
                rows[i, :len(r)] = r
            measures["gvr_rows"] = rows
            measures["gvr_prev"] = np.stack(self.gvr_prev).astype(np.int32)
            measures["gvr_key"] = np.array(self.gvr_key, dtype=np.int32)
            mmeta["gvr_rows"] = {"axes": ["free_row", "free_col"], "unit": "ln probability",
                                 "meaning": "full GQA-group log-attention rows (NaN past the step's context) for "
                                            "GVR replay"}
            mmeta["gvr_prev"] = {"axes": ["free_row", "free_k"], "unit": "token",
                                 "meaning": "the previous step's top-k (largest tier), best first, per gvr row"}
            mmeta["gvr_key"] = {"axes": ["free_row", "free_3"], "unit": "index",
                                "meaning": "(step, layer, kv_head) of each gvr row"}
        meta = {
            "format": FORMAT, "version": VERSION, "name": name, "source": source,
            "model": {k: self.model[k] for k in ("name", "layers", "heads", "kv_heads", "head_dim", "params",
                                                 "max_context")} | {"notes": self.model.get("notes", "")}
                     | {k: self.model[k] for k in OPTIONAL_MODEL_KEYS if k in self.model},
            "context": {"prompt_tokens": int(max(self.prompt_tokens)), "max_tokens": int(max(self.positions))},
            "steps": S,
            "made": {"date": date or _dt.date.today().isoformat(), "script": script, "how": how, "seed": int(seed),
                     "device": device},
            "provenance": provenance, "policies": pol, "measures": mmeta, "coords": coords,
            "record_config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(c).items()},
        }
        if self.draft is not None:
            meta["draft_model"] = dict(self.draft)
        accepted = None
        if c.chain_k:
            meta["spec"] = {"tree_parent": list(range(-1, c.chain_k - 1)), "k": c.chain_k,
                            "verification": "greedy: a draft token is accepted while it equals the target's argmax"}
            accepted = np.array(self.accepted, dtype=np.int64)
        if extra_meta:
            meta.update(extra_meta)
        return AttentionTrace(file=f"{name}.npz", meta=meta, positions=np.array(self.positions, np.int64),
                              step_index=np.array(self.step_index, np.int64), selections=sels, measures=measures,
                              accepted=accepted)


# ---- the CPU path: llama2.c models (stories260K) ------------------------------------------------------
def default_config_for(context: int, prompt: int | None = None) -> RecordConfig:
    """Policy parameters for a CPU recording at `context` tokens (stories260K: 512), scaled so that each
    policy keeps the SAME FRACTION of the context as in the seed documents' settings:
      topk tiers N/128, N/32, N/8 (DSA 2048 of 64K-256K is 3 %-0.8 %; N/8 is GVR's k = 2048 at N = 16K);
      NSA n l' = N/8 in blocks of N/64 (SSV measured at 8K with n 16 x l' 64 = 1024 tokens = 12.5 %);
      LServe budget N/16 (4096 of 64K, LServe Table 6) in logical pages N/256 and physical pages 4x that
      (LServe 16 / 64); SnapKV budgets P/16, P/8, P/4 of the prompt P, recent window P/16, observation
      window N/32; StreamingLLM window N/8 with 4 sink tokens."""
    n = max(64, int(context))
    p = int(prompt or n // 4)
    tiers = tuple(sorted({max(1, n // 128), max(2, n // 32), max(4, n // 8)}))
    block = max(2, n // 64)
    logical = max(1, n // 256)
    return RecordConfig(topk_tiers=tiers, nsa_block=block, nsa_top_n=max(2, (n // 8) // block),
                        page_logical=logical, page_physical=4 * logical, page_budget=max(4 * logical, n // 16),
                        window=n // 8, snap_obs=max(4, n // 32),
                        snap_budgets=tuple(sorted({max(1, p // 16), max(2, p // 8), max(4, p // 4)})),
                        snap_recent=max(1, p // 16), local_tokens=min(64, n // 8),
                        tree_parent=(-1, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 5, 6, 7, 8, 9))


TREE_BRANCHING = (3, 2, 1)


def record_llama2c(model, *, sequences: int = 2, prompt_tokens: int = 128, max_tokens: int | None = None,
                   seed: int = 0, temperature: float = 1.0, cfg: RecordConfig | None = None, name: str = "trace",
                   model_source: str = "", progress: bool = False, date: str | None = None) -> AttentionTrace:
    """Sample `sequences` token sequences from the model itself, starting at BOS (token 1), and record every
    decode step after the first `prompt_tokens` up to `max_tokens` (default: the model's context). At each
    step a self-drafted verification tree (the model's own top-3 / top-2 / top-1 continuations, 15 nodes +
    the root) supplies the multi-row round for nsa_tree. All randomness from numpy Generator(seed)."""
    from simulator.traces.llama2c import KVCache, forward_rows, sample

    T_end = int(max_tokens or model.seq_len)
    cfg = cfg or default_config_for(T_end, prompt_tokens)
    rng = np.random.default_rng(seed)
    meta_model = {"name": model.name, "layers": model.layers, "heads": model.heads, "kv_heads": model.kv_heads,
                  "head_dim": model.head_dim, "params": model.params, "max_context": model.seq_len,
                  "notes": model_source}
    rec = StepRecorder(cfg, meta_model)
    bar = None
    if progress:   # a tqdm bar on a terminal, else a line every few seconds (simulator.progress)
        from simulator.progress import progress_bar

        bar = progress_bar(sequences * (T_end - prompt_tokens), "recording", "step")
    for _ in range(sequences):
        cache = KVCache(model)
        tok = 1
        obs_q: list[list[np.ndarray]] = []
        for pos in range(prompt_tokens):                     # prompt: the model's own sample from BOS
            logits, qs, _ = forward_rows(model, cache, [tok], [-1], commit=True)
            if pos >= prompt_tokens - cfg.snap_obs:
                obs_q.append([q[0] for q in qs])
            tok = sample(logits[0], rng, temperature)
        # SnapKV votes: the observation window's attention over the prompt (causal), group-summed
        votes = np.zeros((model.layers, model.kv_heads, prompt_tokens))
        W = len(obs_q)
        for layer in range(model.layers):
            K = cache.k[layer]                                                   # [Hkv, P, d]
            q = np.stack([o[layer] for o in obs_q])                              # [W, H, d]
            Kh = np.repeat(K, model.heads // model.kv_heads, axis=0)
            s = np.einsum("whd,htd->wht", q, Kh) / math.sqrt(model.head_dim)
            qpos = np.arange(prompt_tokens - W, prompt_tokens)
            s = np.where(np.arange(prompt_tokens)[None, None, :] <= qpos[:, None, None], s, -np.inf)
            p = np.exp(s - s.max(-1, keepdims=True))
            p /= p.sum(-1, keepdims=True)
            votes[layer] = group_mean(p, model.kv_heads).sum(0) * (model.heads // model.kv_heads)
        rec.begin_sequence(prompt_tokens, votes)
        for pos in range(prompt_tokens, T_end):
            logits, qs, probs = forward_rows(model, cache, [tok], [-1], commit=True)
            P = np.stack([group_mean(p[0], model.kv_heads) for p in probs])          # [L, Hkv, T]
            nsa = np.stack([nsa_importance(q, cache.k[i], cfg.nsa_block)[0] for i, q in enumerate(qs)])
            pages = np.stack([page_scores(q, cache.k[i], cfg.page_logical)[0] for i, q in enumerate(qs)])
            # self-drafted tree: top-3 children of the root, top-2 of each, top-1 of each (15 nodes)
            toks, parents, score = [], [], []
            level = [(-1, logits[0], 0.0)]
            for b in TREE_BRANCHING:
                new = []
                for par, lg, s0 in level:
                    lp = lg - lg.max()
                    lp = lp - np.log(np.exp(lp).sum())
                    for t in np.argsort(-lp)[:b]:
                        toks.append(int(t))
                        parents.append(par)
                        score.append(s0 + float(lp[t]))
                        new.append(len(toks) - 1)
                tl, tq, _ = forward_rows(model, cache, toks, parents, commit=False)
                level = [(i, tl[i], score[i]) for i in new]
            tree = np.stack([np.concatenate([nsa[i][None],
                                             nsa_importance(tq[i], cache.k[i], cfg.nsa_block)], 0)
                             for i in range(model.layers)])                          # [L, Q, Hkv, nbc]
            rec.step(P, nsa, pages, tree_nsa_imp=tree, tree_score=np.array([0.0] + score))
            tok = sample(logits[0], rng, temperature)
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    return rec.finish(name=name, source="recorded", script="simulator/traces/recorder.py:record_llama2c",
                      how=f"{sequences} sequences sampled from the model at temperature {temperature} from BOS; "
                          f"prompt = the first {prompt_tokens} sampled tokens; every decode step up to {T_end} "
                          "recorded; verification tree self-drafted (model's own top-3/2/1)", seed=seed,
                      provenance=model_source, date=date)
