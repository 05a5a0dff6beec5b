"""Chapter 12, exercise 1: slots allocated, slots wasted and block-table entries for a block size."""
import random

from otter.test_files import test_case

from teachllm.course.grading import say
from teachllm.serving import BlockManager

OK_FORMAT = False
name = "ch12-ex1"
points = 3


def usage(env, lengths, block_size):
    try:
        got = env["block_usage"](list(lengths), block_size)
    except Exception as error:
        raise AssertionError(say("block_usage raised {e!r}", "block_usage 抛出了异常 {e!r}", e=error)) from None
    assert isinstance(got, tuple) and len(got) == 3 and all(isinstance(x, int) for x in got), say(
        "block_usage should return three ints (allocated, wasted, entries), not {got!r:.60}",
        "block_usage 应返回三个 int（allocated, wasted, entries），而不是 {got!r:.60}", got=got)
    return got


@test_case(points=1, hidden=False)
def test_returns_three_counts(env):
    allocated, wasted, entries = usage(env, [45, 41, 39], 16)
    assert allocated >= 45 + 41 + 39 and 0 <= wasted < allocated and entries >= 3, say(
        "block_usage returned ({a}, {w}, {e}): the slots allocated hold every token, the waste is what is left, and "
        "each request needs at least one block", "block_usage 返回了 ({a}, {w}, {e})：分配的槽位要装下所有 token，"
        "浪费的是剩下的部分，每个请求至少需要一个块", a=allocated, w=wasted, e=entries)


@test_case(points=2, hidden=True)
def test_against_the_block_manager(env):
    rng = random.Random(12)
    for block_size in (1, 3, 4, 16, 64):
        lengths = [rng.randint(1, 200) for _ in range(6)] + [2 * block_size, block_size]  # exact multiples too
        blocks = [BlockManager(1, block_size).blocks_for(n) for n in lengths]
        want = (sum(blocks) * block_size, sum(blocks) * block_size - sum(lengths), sum(blocks))
        got = usage(env, lengths, block_size)
        assert got == want, say(
            "with blocks of {bs} tokens the counts are off ({which}): a request of n tokens needs n / block size "
            "blocks, rounded up (and no more when n is a multiple)",
            "块大小为 {bs} 个 token 时计数不对（{which}）：n 个 token 的请求需要 n / 块大小 个块，向上取整"
            "（n 恰为整数倍时不多要）", bs=block_size,
            which=", ".join(k for k, g, w in zip(("allocated", "wasted", "entries"), got, want, strict=True) if g != w))
