#!/usr/bin/env python3
"""A CPU model of mxfp8_scales_to_blocked's BY_INPUT CTAs (kernels/mxfp8_scales_to_blocked/
kernel.cu: locate_blocks, add_pieces, by_input), checked byte for byte against the spec's layout
at every test and hidden shape whose stripes fit one CTA, for random group offsets (with empty
groups), even ones, and one group holding every row. It checks the index arithmetic and that no
byte is written twice or never; it cannot see what only the GPU shows (races, or the kernel
drifting from this model)."""
import json
import os
import random

STRIPE = 128
UNSET = 0xAB  # no output byte the layout defines can stay this after the check below


def blocked_reference(scales, offsets, M, C, G):
    """The spec's layout, group by group."""
    c4 = (C + 3) // 4
    out = bytearray((M + 96 * G + STRIPE - 1) // STRIPE * c4 * 512)
    padded_start, start = 0, 0
    for end in offsets:
        for r in range(end - start):
            p = padded_start + r
            for c in range(C):
                at = ((p // STRIPE) * c4 + c // 4) * 512 + (p % 32) * 16 + (p % STRIPE) // 32 * 4
                out[at + c % 4] = scales[(start + r) * C + c]
        padded_start += (end - start + STRIPE - 1) // STRIPE * STRIPE
        start = end
    return out


def locate_blocks(offsets, row0, nb):
    """(stripe, quarter, last) of blocks b < nb at rows row0 + 32 b, and all groups' stripes."""
    dest, stripes, prev_end = [None] * 4, 0, 0
    for end in offsets:
        for b in range(nb):
            row = row0 + 32 * b
            if dest[b] is None and end > row:
                padded = stripes * STRIPE + row - prev_end
                dest[b] = (padded // STRIPE, padded % STRIPE // 32, end == row + 32)
        stripes += (end - prev_end + STRIPE - 1) // STRIPE
        prev_end = end
    return dest, stripes


def add_pieces(stripe, qa, qd, qz, b0, pieces):
    q = qa
    while q <= qz:
        w = 4 if q == 0 and qz == 3 else 2 if q % 2 == 0 and q < qz else 1
        src = 0
        for k in range(w):
            src |= (b0 + q + k - qa if q + k <= qd else 15) << (4 * k)
        pieces.append((stripe, q, w, src))
        q += w


def cta_pieces(offsets, M, G, j):
    in_ctas = (M + STRIPE - 1) // STRIPE
    row0 = STRIPE * j
    nb = min(STRIPE, M - row0) // 32 if j < in_ctas else 0
    dest, used = locate_blocks(offsets, row0, nb)
    pieces = []
    if nb > 0:
        b0, qa = 0, dest[0][1]
        for b in range(nb):
            if b + 1 == nb or dest[b + 1][0] != dest[b][0]:
                stripe, quarter, last = dest[b]
                add_pieces(stripe, qa, quarter, 3 if last else quarter, b0, pieces)
                if b + 1 < nb:
                    b0, qa = b + 1, dest[b + 1][1]
    elif used + j - in_ctas < (M + 96 * G + STRIPE - 1) // STRIPE:
        pieces.append((used + j - in_ctas, 0, 4, 0xFFFF))
    assert len(pieces) <= 8, pieces  # kMaxPieces
    return row0, pieces


def by_input(scales, offsets, M, C, G):
    c4 = (C + 3) // 4
    ctas = (M + 96 * G + STRIPE - 1) // STRIPE
    out = bytearray([UNSET]) * (ctas * c4 * 512)
    written = bytearray(len(out))
    for j in range(ctas):
        row0, pieces = cta_pieces(offsets, M, G, j)
        for stripe, qa, nq, src in pieces:
            for t in range(c4):
                for i in range(32):
                    for k in range(nq):
                        b = (src >> (4 * k)) & 15
                        for cc in range(4):
                            c = 4 * t + cc
                            pad = b == 15 or c >= C
                            at = (stripe * c4 + t) * 512 + i * 16 + 4 * (qa + k) + cc
                            assert not written[at], ("written twice", j, stripe, t, i)
                            written[at] = 1
                            out[at] = 0 if pad else scales[(row0 + 32 * b + i) * C + c]
    assert all(written), "a byte never written"
    return out


def random_offsets(M, G, rng):
    cuts = sorted(rng.randint(0, M // 32) for _ in range(G - 1)) + [M // 32]
    return [32 * c for c in cuts]  # repeated cuts are empty groups


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "problems", "mxfp8_scales_to_blocked", "spec.json")) as f:
        spec = json.load(f)
    shapes = [(s["M"], s["K"], s["G"]) for kind in ("test", "hidden") for s in spec["shapes"][kind]]
    rng = random.Random(1)
    checked = 0
    for M, K, G in shapes:
        C = K // 32
        if (C + 3) // 4 > 64:  # TILES: wider stripes take the kernels by stripe
            continue
        even = [32 * ((g + 1) * (M // 32) // G) for g in range(G)]
        one = [0] * (G - 1) + [M]
        for offsets in (random_offsets(M, G, rng), even, one, random_offsets(M, G, rng)):
            scales = bytes(rng.randrange(256) for _ in range(M * C))
            got = by_input(scales, offsets, M, C, G)
            assert got == blocked_reference(scales, offsets, M, C, G), (M, K, G, offsets)
        checked += 1
    assert checked >= 10, checked
    print(f"scales_by_input_model: {checked} shapes, 4 offset sets each: every byte matches")


if __name__ == "__main__":
    main()
