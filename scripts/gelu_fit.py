#!/usr/bin/env python3
"""gelu_fit.py: fits the tables of the float32 AVX-512 GELU kernel (ops/activation/act_common.h).

log2(cdf(-a)) = log2(erfc(a / sqrt 2) / 2), a = |x| in [0, 15), as 16 degree-4 polynomials in a
(near-minimax Chebyshev fits, mpmath.chebyfit) on the intervals that bits(a + 1) >> 21 numbers:
quarters of [0, 1), halves of [1, 3), units of [3, 7), twos of [7, 15). Each table lists the
16 intervals in vpermps order: interval j sits at lane (j + 12) & 15 (the low 4 bits of
(127 << 2) + j). Then 2^f = 1 + f q(f) on [0, 1), q of degree 5. Prints C; needs mpmath.
Usage: python3 scripts/gelu_fit.py > /tmp/tables.c (then paste)."""
import struct

import mpmath as mp

mp.mp.dps = 40
DEG = 4
EDGES = [0, .25, .5, .75, 1, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 9, 11, 13, 15]


def f32(v):
    return struct.unpack('f', struct.pack('f', float(v)))[0]


def log2cdf(a):
    return mp.log(mp.erfc(a / mp.sqrt(2)) / 2, 2)


def main():
    fits, worst = [], 0
    for j in range(16):
        lo, hi = EDGES[j], EDGES[j + 1]
        p = [f32(c) for c in mp.chebyfit(log2cdf, [lo, hi], DEG + 1)]
        for k in range(401):  # the float coefficients, evaluated exactly
            a = mp.mpf(lo) + (hi - lo) * mp.mpf(k) / 400
            v = 0
            for c in p:
                v = v * a + c
            worst = max(worst, abs(v - log2cdf(a)))
        fits.append(p[::-1])  # lowest degree first
    print("/* max |error| in log2 units, float coefficients: %.2g */" % worst)
    print("static const float act_gelu_lt[%d][16] = {" % (DEG + 1))
    for d in range(DEG + 1):
        row = ["%.9gf" % v if v != int(v) else "%.1ff" % v
               for v in (fits[(lane + 4) % 16][d] for lane in range(16))]
        print("    {" + ",\n     ".join(", ".join(row[k:k + 4]) for k in range(0, 16, 4)) + "},")
    print("};")
    q = [f32(c) for c in mp.chebyfit(lambda f: (mp.power(2, f) - 1) / f if f else mp.log(2),
                                     [0, 1], 6)]
    e = max(abs((1 + f * sum(c * f ** (5 - k) for k, c in enumerate(q))) / mp.power(2, f) - 1)
            for f in [mp.mpf(k) / 1000 for k in range(1001)])
    print("/* 2^f = 1 + f q(f), q from the highest degree down; relative error %.2g */" % e)
    print("static const float act_gelu_q[6] = {" + ", ".join("%.9gf" % c for c in q[:3]) + ",\n" +
          "                                    " + ", ".join("%.9gf" % c for c in q[3:]) + "};")


if __name__ == "__main__":
    main()
