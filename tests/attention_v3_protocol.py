"""The synchronization protocol of attention v3's CTA (kernels/attention.cu,
fa3::kernel), modelled on the host: the producer thread, the two consumer
warpgroups (one actor each), mbarriers with parity waits and transaction
counts, TMA copies landing at random later times, the named barriers 1 and 2
of the consumers' turns (bar.sync by one warpgroup, bar.arrive by the other,
256 threads a generation). Random interleavings of every key-tile count from
1 to 19 check: no deadlock; each consumer finds in a stage the tile it
expects; no copy lands in a stage a consumer still reads; the named barriers
end with no partial generation. The actors follow the kernel's code line by
line (its waits, parities, arrivals and turns); change both together.
tests/test_attention_v3.c checks the arithmetic, this the ordering."""
import random
import sys


class MBar:
    """mbarrier: `count` arrivals and the transaction bytes complete a phase."""

    def __init__(self, count):
        self.count, self.arrived, self.tx, self.phase = count, 0, 0, 0

    def arrive(self, tx=0):  # mbarrier.arrive(.expect_tx)
        self.arrived += 1
        self.tx += tx
        self._check()

    def complete_tx(self, n):  # a TMA copy's bytes landed
        self.tx -= n
        self._check()

    def _check(self):
        if self.arrived == self.count and self.tx == 0:
            self.arrived = 0
            self.phase += 1

    def done(self, parity):  # try_wait.parity: the phase of that parity completed
        return (self.phase & 1) != parity


class NamedBar:
    def __init__(self):
        self.arrived, self.gen = 0, 0

    def arrive(self):  # one warpgroup's bar.arrive or bar.sync
        self.arrived += 128
        assert self.arrived <= 256, "arrivals of two generations mixed"
        if self.arrived == 256:
            self.arrived = 0
            self.gen += 1


def run(n_kt, seed):
    rnd = random.Random(seed)
    q_full = MBar(1)
    k_full, v_full = [MBar(1), MBar(1)], [MBar(1), MBar(1)]
    k_empty, v_empty = [MBar(2), MBar(2)], [MBar(2), MBar(2)]
    named = {1: NamedBar(), 2: NamedBar()}
    holds = {(r, s): None for r in "kv" for s in (0, 1)}  # the tile in each stage
    readers = {key: set() for key in holds}
    landing = []  # (time, action)
    clock = [0]

    def copy(ring, s, tile, bar):
        def land():
            assert not readers[(ring, s)], f"{ring}{tile} lands in stage {s} while {readers[(ring, s)]} read it"
            holds[(ring, s)] = tile
            bar.complete_tx(1)
        landing.append((clock[0] + rnd.randint(1, 30), land))

    def wait(bar, parity):
        while not bar.done(parity):
            yield

    def turn_wait(i):  # bar.sync i, 256
        gen = named[i].gen
        named[i].arrive()
        while named[i].gen == gen:
            yield

    def busy():  # a GEMM in flight or a softmax: other actors move meanwhile
        for _ in range(rnd.randint(0, 5)):
            yield

    def producer():
        q_full.arrive(1)
        landing.append((clock[0] + rnd.randint(1, 30), lambda: q_full.complete_tx(1)))
        for kt in range(n_kt):
            s = kt & 1
            if kt >= 2:
                yield from wait(k_empty[s], ((kt >> 1) - 1) & 1)
            k_full[s].arrive(1)
            copy("k", s, kt, k_full[s])
            if kt >= 2:
                yield from wait(v_empty[s], ((kt >> 1) - 1) & 1)
            v_full[s].arrive(1)
            copy("v", s, kt, v_full[s])
            yield

    def read(cw, ring, s, tile):  # a wgmma issued on the stage
        assert holds[(ring, s)] == tile, f"wg{cw} wants {ring}{tile} in stage {s}, which holds {holds[(ring, s)]}"
        readers[(ring, s)].add(cw)

    def consumer(cw):
        mine, other = 1 + cw, 2 - cw  # turn_wait(cw), turn_pass(1 - cw)
        if cw == 1:
            named[1].arrive()
        yield from wait(q_full, 0)
        yield from turn_wait(mine)
        yield from wait(k_full[0], 0)
        read(cw, "k", 0, 0)
        named[other].arrive()
        yield from busy()  # wgmma_wait_all
        readers[("k", 0)].discard(cw)
        k_empty[0].arrive()
        yield from busy()  # softmax
        for kt in range(n_kt - 1):
            s, s1 = kt & 1, (kt + 1) & 1
            yield from turn_wait(mine)
            yield from wait(v_full[s], (kt >> 1) & 1)
            yield from wait(k_full[s1], ((kt + 1) >> 1) & 1)
            read(cw, "v", s, kt)
            read(cw, "k", s1, kt + 1)
            named[other].arrive()
            yield from busy()  # wgmma_wait_all
            readers[("v", s)].discard(cw)
            readers[("k", s1)].discard(cw)
            v_empty[s].arrive()
            k_empty[s1].arrive()
            yield from busy()  # softmax
        kt = n_kt - 1
        yield from turn_wait(mine)
        yield from wait(v_full[kt & 1], (kt >> 1) & 1)
        read(cw, "v", kt & 1, kt)
        if cw == 0:
            named[other].arrive()
        yield from busy()
        readers[("v", kt & 1)].discard(cw)

    actors = [producer(), consumer(0), consumer(1)]
    alive = [True, True, True]
    for step in range(200000):
        clock[0] = step
        for item in [x for x in landing if x[0] <= step]:
            landing.remove(item)
            item[1]()
        if not any(alive) and not landing:
            break
        i = rnd.randrange(3)
        if alive[i]:
            try:
                next(actors[i])
            except StopIteration:
                alive[i] = False
    else:
        raise AssertionError(f"deadlock: {n_kt} key tiles, seed {seed}, alive {alive}")
    assert named[1].arrived == 0 and named[2].arrived == 0, "a named barrier ends mid-generation"


def main():
    for n_kt in range(1, 20):
        for seed in range(100):
            run(n_kt, seed)
    print("attention v3 protocol: no deadlock, stages hold the tiles read, 19 x 100 interleavings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
