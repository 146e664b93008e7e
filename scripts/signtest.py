"""The two-sided exact sign test the benchmark scripts judge their alternated pairs by."""
import math


def sign_p(a, b):
    """p of a split of a pairs one way and b the other at least this uneven, if each way were as
    likely (ties left out before calling)."""
    n, k = a + b, min(a, b)
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n)
