#!/usr/bin/env python3
# Copyright 2026 The moeroute Authors. SPDX-License-Identifier: Apache-2.0
"""A bit-level host model of gate.cuh's segment rows (v21, perf-log v21): the tight bound
(mr_seg_filter_top's TB), form 2 (the candidates inserted into sorted lists, then the butterfly) and
form 3 (mr_seg_rank_place as written: the list per segment in shared memory 5 LPR words apart, zeroed
lane by lane, filled at each lane's prefix, ranked from slots sl + m LPR with the warp-uniform guards,
the scatter of ranks < k), against the true top k of each row, one warp at a time, with the fallbacks
to the network. Shared memory starts as garbage and two rows go through the same words.

Written in session 22 by a review session (no GPU) to check form 3 before any device run; it checks
the algorithm, not the CUDA code (the device checks are cuda_check --seg and large_lab --v6).

    python3 dev/seg_form_model.py [seed] [warps]     # exit status 1 on any mismatch
"""

import random, struct, math, sys
import numpy as np

M32 = 0xffffffff
def f16val(u):
    return float(np.array([u], dtype=np.uint16).view(np.float16)[0])
def bf16val(u):
    return struct.unpack('<f', struct.pack('<I', (u & 0xffff) << 16))[0]

class DT:
    def __init__(s, bf):
        s.bf = bf
        s.val = bf16val if bf else f16val
        s.ninf = 0xff80 if bf else 0xfc00
        s.pinf = 0x7f80 if bf else 0x7c00
        s.nan = 0x7fc0 if bf else 0x7e00
    def key_hi(s, u):  # mr_seg_key_hi: NaN -> -inf, -0 -> +0, ord16
        v = s.val(u)
        if v != v: u = s.ninf
        elif v == 0.0: u = 0
        b = u << 16
        o = b ^ ((M32 if (b >> 31) else 0) | 0x80000000)
        return o & 0xffff0000
    # half ops (per 16-bit half)
    def hmax(s, a, b):
        va, vb = s.val(a), s.val(b)
        if va != va and vb != vb: return s.nan
        if va != va: return b
        if vb != vb: return a
        if va == vb: return a  # +-0: either (irrelevant for ge)
        return a if va > vb else b
    def ge(s, a, b):
        va, vb = s.val(a), s.val(b); return va >= vb  # NaN false
    def gt(s, a, b):
        va, vb = s.val(a), s.val(b); return va > vb

def tight_bound(dt, seg_elems, LPR, EPS, k):
    """per segment: th (16-bit) and per-lane ok (th > -inf). seg_elems[sl][r]"""
    # half-maxima per lane: even elements, odd elements (tree max; NaN-skipping max is order-independent
    # except all-NaN -> NaN)
    hm = []
    for sl in range(LPR):
        ev = seg_elems[sl][0::2]; od = seg_elems[sl][1::2]
        a = ev[0]
        for x in ev[1:]: a = dt.hmax(a, x)
        b = od[0]
        for x in od[1:]: b = dt.hmax(b, x)
        hm.append((a, b))
    ths = []
    for sl in range(LPR):
        a, b = hm[sl]
        ca = sum(dt.ge(g[0], a) for g in hm) + sum(dt.ge(g[1], a) for g in hm)
        cb = sum(dt.ge(g[0], b) for g in hm) + sum(dt.ge(g[1], b) for g in hm)
        th = a if ca >= k else dt.ninf
        if cb >= k: th = dt.hmax(th, b)
        ths.append(th)
    th = ths[0]
    for t in ths[1:]: th = dt.hmax(th, t)
    ok = dt.gt(th, dt.ninf)
    return th, ok

def lane_cands(dt, elems, th, EPS):
    """acc bit order: j<16 -> r=2j, j>=16 -> r=2(j-16)+1; returns list of r in __ffs order"""
    acc = 0
    for i in range(EPS // 2):
        if dt.ge(elems[2 * i], th): acc |= 1 << i
        if dt.ge(elems[2 * i + 1], th): acc |= 1 << (i + 16)
    rs = []
    a = acc
    while a:
        j = (a & -a).bit_length() - 1
        a &= a - 1
        rs.append(((j & 15) << 1) | (j >> 4))
    return rs

def merge_top(a, b, L):
    a = list(a)
    for i in range(L): a[i] = max(a[i], b[L - 1 - i])
    s = L // 2
    while s > 0:
        for i in range(L):
            if (i & s) == 0 and a[i] < a[i + s]: a[i], a[i + s] = a[i + s], a[i]
        s //= 2
    return a

def warp_run(dt, rows, keyrows, live, LPR, EPS, L, k, sm, form):
    """rows: RPW rows of LPR*EPS 16-bit values as held in registers (pr); keyrows: what __ldg(row)
    rereads (dead rows: another row). Returns per segment (my_keys[LPR], top0) and whether the path
    was filtered / ranked. sm: the warp's 128 shared words (persist across calls)."""
    RPW = 32 // LPR
    CMAX = 4 * LPR
    STRIDE = 5 * LPR  # MR_SEG_RANK_STRIDE: the lists 5 LPR words apart (banks)
    lanes = []  # per segment: per lane data
    segs = []
    for sg in range(RPW):
        el = [rows[sg][sl * EPS:(sl + 1) * EPS] for sl in range(LPR)]
        th, okth = tight_bound(dt, el, LPR, EPS, k)
        cands = [lane_cands(dt, el[sl], th, EPS) for sl in range(LPR)]
        oks = [okth and len(c) <= 16 for c in cands]
        segs.append((el, th, cands, oks))
    # network truth per segment: keys from register values
    def truth(sg):
        ks = sorted((dt.key_hi(rows[sg][e]) + (0xffff - e) for e in range(LPR * EPS)), reverse=True)
        return ks[:L]
    out = []
    if form == 2:
        allok = all(all(s[3]) for s in segs)
        if not allok:
            return [(truth(sg), 'net') for sg in range(RPW)], False
        for sg in range(RPW):
            el, th, cands, oks = segs[sg]
            tops = []
            for sl in range(LPR):
                top = [0] * L
                for r in cands[sl]:
                    key = dt.key_hi(keyrows[sg][sl * EPS + r]) + (0xffff - sl * EPS - r)
                    for i in range(L):
                        h = max(top[i], key); key = top[i] ^ key ^ h; top[i] = h
                tops.append(top)
            off = LPR // 2
            while off > 0:
                tops = [merge_top(tops[sl], tops[sl ^ off], L) for sl in range(LPR)]
                off //= 2
            # lane sl: top_of_lane (sl<L), top0
            out.append(([tops[sl][sl] if sl < L else 0 for sl in range(LPR)], tops[0][0]))
        return out, True
    # form 3 as written
    Cs = [sum(len(c) for c in s[2]) for s in segs]
    allok = all(all(segs[sg][3]) and Cs[sg] <= CMAX for sg in range(RPW))
    if not allok:
        return [(truth(sg), 'net') for sg in range(RPW)], False
    # zeroing
    for lane in range(32):
        sg, sl = lane // LPR, lane % LPR
        base = sg * STRIDE
        for q in range(4): sm[base + 4 * sl + q] = 0
    # candidate writes at exclusive prefix
    for sg in range(RPW):
        el, th, cands, oks = segs[sg]
        pos = 0
        for sl in range(LPR):
            for r in cands[sl]:
                p = sg * STRIDE + pos
                assert 0 <= pos < CMAX
                sm[p] = dt.key_hi(keyrows[sg][sl * EPS + r]) + (0xffff - sl * EPS - r)
                pos += 1
    Cw = max(Cs)
    NM = CMAX // LPR
    res = []
    snapshot = list(sm)
    writes = {}
    for sg in range(RPW):
        base = sg * STRIDE
        lane_x = []
        for sl in range(LPR):
            x = [snapshot[base + sl + m * LPR] for m in range(NM)]
            rk = [0] * NM
            for j0 in range(0, Cw, 4):
                assert j0 + 3 < CMAX
                q = snapshot[base + j0: base + j0 + 4]
                for m in range(NM):
                    if m * LPR < Cw:
                        rk[m] += sum(1 for v in q if v > x[m])
            for m in range(NM):
                if x[m] != 0 and rk[m] < k:
                    assert rk[m] < CMAX
                    a = base + rk[m]
                    assert a not in writes, "two writers"
                    writes[a] = x[m]
    for a, v in writes.items(): sm[a] = v
    for sg in range(RPW):
        base = sg * STRIDE
        mk = [sm[base + (sl if sl < k else 0)] for sl in range(LPR)]
        res.append((mk, sm[base]))
    return res, True

def compare(dt, rows, keyrows, live, LPR, EPS, L, k, sm, stats):
    RPW = 32 // LPR
    r2, f2 = warp_run(dt, rows, keyrows, live, LPR, EPS, L, k, None, 2)
    r3, f3 = warp_run(dt, rows, keyrows, live, LPR, EPS, L, k, sm, 3)
    stats['n'] += 1; stats['f2'] += f2; stats['f3'] += f3
    for sg in range(RPW):
        if not live[sg]: continue
        ks = sorted((dt.key_hi(rows[sg][e]) + (0xffff - e) for e in range(LPR * EPS)), reverse=True)
        tk = ks[:k]
        def get(r, f):
            if r[sg][1] == 'net': return list(r[sg][0][:k]), r[sg][0][0]
            mk, t0 = r[sg]
            return mk[:k], t0
        a2, t2 = get(r2, f2); a3, t3 = get(r3, f3)
        if a2 != tk or a3 != tk or t2 != ks[0] or t3 != ks[0]:
            return (sg, tk, a2, a3, ks[0], t2, t3)
    return None

def gen_row(rng, dt, E, mode):
    if mode == 'normal':
        vals = [rng.gauss(0, 1) for _ in range(E)]
        return [to16(dt, v) for v in vals]
    if mode == 'ties':
        pool = [rng.choice([-1.0, -0.5, 0.0, -0.0, 0.5, 1.0, 2.0, 3.0, 4.0]) for _ in range(rng.randint(2, 12))]
        return [to16(dt, rng.choice(pool)) for _ in range(E)]
    if mode == 'equal':
        v = to16(dt, rng.choice([0.0, -0.0, 1.0, -2.0, float('inf')]))
        return [v] * E
    if mode == 'special':
        out = []
        for _ in range(E):
            u = rng.random()
            if u < 0.1: out.append(dt.nan)
            elif u < 0.15: out.append(dt.pinf)
            elif u < 0.4: out.append(dt.ninf)
            elif u < 0.5: out.append(0x8000)
            elif u < 0.6: out.append(0)
            else: out.append(to16(dt, rng.gauss(0, 1)))
        return out
    if mode == 'fewtop':  # mostly -inf / NaN, a few finite (some tied)
        out = [rng.choice([dt.ninf, dt.nan, 0xfc01 if not dt.bf else 0xff81]) for _ in range(E)]
        nf = rng.randint(1, 40)
        for _ in range(nf):
            out[rng.randrange(E)] = to16(dt, rng.choice([1.0, 2.0, rng.gauss(0, 1), float('inf'), -0.0, 0.0]))
        return out
    if mode == 'near':  # values in a narrow band: near C = 4 LPR
        base = rng.gauss(0, 1)
        return [to16(dt, base + rng.choice([0, 0, 0.01, 0.02, -1, -2, -3])) for _ in range(E)]
    if mode == 'edge':  # exactly m copies of the max, rest lower
        m = rng.randint(1, 40)
        out = [to16(dt, rng.gauss(-3, 1)) for _ in range(E)]
        for e in rng.sample(range(E), min(m, E)): out[e] = to16(dt, 5.0)
        return out
    raise ValueError(mode)

def to16(dt, v):
    if dt.bf:
        if v != v: return dt.nan
        u = struct.unpack('<I', struct.pack('<f', v))[0]
        u = (u + 0x7fff + ((u >> 16) & 1)) >> 16
        return u & 0xffff
    return int(np.array([v], dtype=np.float16).view(np.uint16)[0])

def main():
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    nw = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    rng = random.Random(seed)
    modes = ['normal', 'ties', 'equal', 'special', 'fewtop', 'near', 'edge']
    cfgs = [(4, 32, 4), (8, 16, 4), (8, 16, 8), (8, 32, 4), (8, 32, 8)]
    stats = {'n': 0, 'f2': 0, 'f3': 0}
    bad = 0
    for it in range(nw):
        LPR, EPS, L = rng.choice(cfgs)
        k = rng.randint(1, L)
        # L=8 used only for k>4 in the dispatch; test every k anyway
        dt = DT(rng.random() < 0.5)
        E = LPR * EPS
        RPW = 32 // LPR
        sm = [rng.getrandbits(32) for _ in range(160)]  # stale garbage from a previous row
        wm = rng.choice([None, 'normal', 'special', 'fewtop', 'edge', 'near', 'normal'])
        for step in range(2):  # two rows per warp through the same smem
            rows, keyrows, live = [], [], []
            ndead = rng.choice([0] * 6 + list(range(1, RPW)))
            for sg in range(RPW):
                if sg >= RPW - ndead:
                    rows.append([0] * E); keyrows.append(gen_row(rng, dt, E, 'normal')); live.append(False)
                else:
                    r = gen_row(rng, dt, E, wm if wm else rng.choice(modes))
                    rows.append(r); keyrows.append(r); live.append(True)
            e = compare(dt, rows, keyrows, live, LPR, EPS, L, k, sm, stats)
            if e:
                bad += 1
                if bad < 5: print('MISMATCH', LPR, EPS, L, k, dt.bf, e)
    print('warps', stats, 'bad', bad)
    sys.exit(1 if bad else 0)

if __name__ == '__main__':
    main()
