#!/usr/bin/env python3
"""JAX's own multi-process CPU collectives, timed the way spmd-bench times
libspmd's, so the two can stand side by side (tools/mpi-bench.sh).

P processes of JAX (jax.distributed over 127.0.0.1, gloo CPU collectives),
L CPU devices each (XLA_FLAGS=--xla_force_host_platform_device_count=L),
one mesh ('p': P, 'd': L) of all n = P*L devices. For f32 sizes -b .. -e
(factor -f), each collective runs inside a jitted shard_map over both axes:

  all_reduce      psum(b, ('p','d'))
  all_gather      all_gather(b, ('p','d'), tiled=True)
  reduce_scatter  psum_scatter(b, ('p','d'), scatter_dimension=0, tiled=True)

Sizes are counted as spmd-bench counts them (the nccl-tests way):
all_reduce, one device's buffer; all_gather, the gathered result;
reduce_scatter, one device's input (sizes that hold no element per device
are skipped, as spmd-bench skips them). Every call, warm-ups and timed ones,
runs after a barrier (a small jitted psum over all devices) and is waited
for by block_until_ready; a call's time is the slowest process's (-A).
Columns, as spmd-bench -M only prints them:

  size(B) count type collective time(us) median(us) algbw busbw

time is the mean over the timed iterations, median the middle one
(sorted[n // 2], as spmd-bench takes it), algbw = size / mean,
busbw = algbw * 2(n-1)/n for all_reduce and (n-1)/n for the others.

usage: python tools/jax_mp_bench.py [-P 2] [-L 4] [-o OPS] [-b 8] [-e 64M]
                                    [-f 2] [-n 20] [-w 5] [-c 1] [-A max]
                                    [-t SECONDS]
Without --worker this is the launcher: it starts P workers (this script
with --worker, in sessions of their own), relays process 0's output, and
when any worker fails, or -t passes, stops the others and prints the
failed workers' stderr; exit status 0, 1 (a worker failed or results were
wrong) or 124 (timeout). Run it with the Python that has JAX.
"""
import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

OPS = ("all_gather", "all_reduce", "reduce_scatter")  # spmd-bench's order


def parse_size(s):
    m = re.fullmatch(r"\s*([0-9.]+)\s*([kKmMgG]?)[bB]?\s*", s)
    if not m:
        raise argparse.ArgumentTypeError(f"bad size '{s}'")
    mult = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]
    return int(float(m.group(1)) * mult)


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="jax_mp_bench.py",
        description="JAX multi-process CPU collectives, timed as spmd-bench times libspmd's",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("-P", dest="procs", type=int, default=2, help="processes (default 2)")
    ap.add_argument("-L", dest="local", type=int, default=4, help="CPU devices per process (default 4)")
    ap.add_argument("-o", dest="ops", default="all",
                    help="collectives, comma separated: all_gather, all_reduce, reduce_scatter, or all")
    ap.add_argument("-b", dest="minb", type=parse_size, default=8, help="smallest size in bytes (default 8); K, M, G")
    ap.add_argument("-e", dest="maxb", type=parse_size, default=64 << 20, help="largest size in bytes (default 64M)")
    ap.add_argument("-f", dest="factor", type=float, default=2.0, help="size factor (default 2)")
    ap.add_argument("-n", dest="iters", type=int, default=20, help="timed iterations per size (default 20)")
    ap.add_argument("-w", dest="warmup", type=int, default=5, help="warm-up iterations per size (default 5)")
    ap.add_argument("-c", dest="check", type=int, choices=(0, 1), default=1,
                    help="check results, each process its own shards (default 1)")
    ap.add_argument("-A", dest="agg", choices=("max", "avg", "0"), default="max",
                    help="a call's time: the slowest process's (max, default), the mean (avg), process 0's (0)")
    ap.add_argument("-t", dest="timeout", type=float, default=600,
                    help="launcher: stop the workers after this many seconds (default 600)")
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.procs < 1 or a.local < 1 or a.iters < 1 or a.warmup < 0 or a.factor <= 1 or a.minb > a.maxb:
        ap.error("need -P, -L, -n >= 1, -w >= 0, -f > 1, -b <= -e")
    if a.ops == "all":
        a.ops = ",".join(OPS)
    for op in a.ops.split(","):
        if op not in OPS:
            ap.error(f"unknown collective '{op}' (have {', '.join(OPS)})")
    return a


# ---------------------------------------------------------------- launcher

def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launcher(a, argv):
    port = free_port()
    flags = re.sub(r"--xla_force_host_platform_device_count=\S+", "", os.environ.get("XLA_FLAGS", ""))
    env = dict(os.environ)
    env["XLA_FLAGS"] = (flags + f" --xla_force_host_platform_device_count={a.local}").strip()
    env["JAX_PLATFORMS"] = "cpu"
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["PYTHONUNBUFFERED"] = "1"
    errdir = tempfile.mkdtemp(prefix="jax_mp_bench.")
    workers, errs = [], []

    def stop_all():
        for p in workers:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        t_end = time.monotonic() + 5
        for p in workers:
            try:
                p.wait(timeout=max(0.1, t_end - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()

    def on_signal(signum, _frame):
        stop_all()
        shutil.rmtree(errdir, ignore_errors=True)
        print(f"jax_mp_bench.py: stopped by signal {signum}; workers stopped", file=sys.stderr)
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    def tail(i, lines=40):
        with open(errs[i], errors="replace") as f:
            text = [s for s in f.read().rstrip("\n").split("\n") if "[Gloo]" not in s and "peer ranks" not in s]
        return "\n".join("    " + s for s in text[-lines:])

    sys.stdout.flush()
    status = 0
    try:
        for i in range(a.procs):
            err = os.path.join(errdir, f"worker{i}.stderr")
            errs.append(err)
            cmd = [sys.executable, os.path.abspath(__file__), *argv, "--worker", str(i), "--port", str(port)]
            with open(err, "w") as ef:
                workers.append(subprocess.Popen(
                    cmd, env=env, stdin=subprocess.DEVNULL,
                    stdout=None if i == 0 else subprocess.DEVNULL, stderr=ef,
                    start_new_session=True))
        deadline = time.monotonic() + a.timeout
        while True:
            rcs = [p.poll() for p in workers]
            failed = [i for i, rc in enumerate(rcs) if rc not in (None, 0)]
            if failed:
                # Let a worker that is failing too finish saying why.
                time.sleep(0.5)
                rcs = [p.poll() for p in workers]
                stop_all()
                wrong_only = all(rcs[i] == 3 for i in failed)
                if wrong_only:
                    print("jax_mp_bench.py: results were wrong", file=sys.stderr)
                    for i in failed:
                        print(f"  worker {i}:\n{tail(i, 10)}", file=sys.stderr)
                    status = 1
                    break
                print(f"jax_mp_bench.py: worker(s) {', '.join(map(str, failed))} of {a.procs} failed "
                      f"(exit status {', '.join(str(rcs[i]) for i in failed)}); stopped the others", file=sys.stderr)
                for i in failed:
                    print(f"--- worker {i} stderr (last lines; all in {errs[i]}):\n{tail(i)}", file=sys.stderr)
                status = 1
                break
            if all(rc == 0 for rc in rcs):
                break
            if time.monotonic() > deadline:
                stop_all()
                print(f"jax_mp_bench.py: timed out after {a.timeout:g} s; stopped the workers "
                      f"(P={a.procs} L={a.local})", file=sys.stderr)
                for i in range(a.procs):
                    print(f"--- worker {i} stderr (last lines):\n{tail(i, 10)}", file=sys.stderr)
                status = 124
                break
            time.sleep(0.05)
    finally:
        stop_all()
    if status == 0:
        for e in errs:
            os.unlink(e)
        os.rmdir(errdir)
    return status


# ---------------------------------------------------------------- worker

def worker(a):
    # The table goes to the launcher's stdout; what the libraries print to
    # stdout themselves (gloo's "[Gloo] Rank ... connected") goes to stderr.
    table = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = table
    import numpy as np
    import jax
    from jax.experimental import multihost_utils
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as PS

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{a.port}", num_processes=a.procs,
                               process_id=a.worker, initialization_timeout=120)
    me = jax.process_index()
    devs = sorted(jax.devices(), key=lambda d: (d.process_index, d.id))
    n = len(devs)
    if n != a.procs * a.local or len(jax.local_devices()) != a.local:
        raise SystemExit(f"jax_mp_bench.py: expected {a.procs} x {a.local} devices, got {n} "
                         f"({len(jax.local_devices())} local)")
    mesh = Mesh(np.array(devs).reshape(a.procs, a.local), ("p", "d"))
    axes = ("p", "d")
    split = NamedSharding(mesh, PS(axes))
    es = 4

    def smap(f, out_spec):
        # check_vma=False: all_gather's result is replicated, which the
        # varying-axes check cannot see (out_specs P()).
        return jax.jit(jax.shard_map(f, mesh=mesh, in_specs=PS(axes), out_specs=out_spec, check_vma=False))

    programs = {
        "all_reduce": smap(lambda b: jax.lax.psum(b, axes), PS(axes)),
        "all_gather": smap(lambda b: jax.lax.all_gather(b, axes, tiled=True), PS()),
        "reduce_scatter": smap(lambda b: jax.lax.psum_scatter(b, axes, scatter_dimension=0, tiled=True),
                               PS(axes)),
    }
    # The barrier: a small psum over every device, waited for.
    bar_f = smap(lambda b: jax.lax.psum(b, axes), PS(axes))
    bar_x = jax.make_array_from_process_local_data(split, np.ones(a.local, np.float32), (n,))

    def barrier():
        bar_f(bar_x).block_until_ready()

    pattern = np.arange(13, dtype=np.float32)

    def values(lo, hi):  # element i of spmd-bench's input is i % 13
        return np.resize(np.roll(pattern, -(lo % 13)), hi - lo)

    def expected(op, c, count, index):
        """The right output over `index` (a shard's slice of the global output)."""
        total = n * c
        lo, hi, _ = index[0].indices(total)
        if op == "all_gather":  # the whole input, on every device
            return values(lo, hi)
        p = np.arange(lo, hi, dtype=np.int64)
        if op == "all_reduce":  # element j of every device's output: sum over m of x[m*c + j]
            p %= c
            stride = c
        else:  # reduce_scatter: element k*c + j: sum over m of x[m*count + k*c + j]
            stride = count
        out = np.zeros(hi - lo, np.float32)
        for m in range(n):
            out += ((p + m * stride) % 13).astype(np.float32)
        return out

    if me == 0:
        agg = {"max": "the slowest process's", "avg": "the processes' mean", "0": "process 0's"}[a.agg]
        print(f"# jax_mp_bench: JAX {jax.__version__}, Mesh('p': {a.procs}, 'd': {a.local}) of cpu devices "
              f"({a.procs} process{'es' if a.procs > 1 else ''} x {a.local} devices), collectives over "
              f"('p','d') ({n} devices per group), float32, {a.iters} iterations, {a.warmup} warm-ups")
        print(f"# jax.distributed, gloo CPU collectives; jitted shard_map, each call after a barrier "
              f"(small psum), waited by block_until_ready; time of a call: {agg}")
        print("#")
        print("# %12s %13s %9s %15s %11s %11s %9s %9s" % ("size(B)", "count", "type", "collective",
                                                          "time(us)", "median(us)", "algbw", "busbw"))
        print("# %12s %13s %9s %15s %11s %11s %9s %9s" % ("", "(elements)", "", "(JAX)", "", "",
                                                          "(GB/s)", "(GB/s)"))
        sys.stdout.flush()

    total_wrong = 0
    for op in a.ops.split(","):
        s = float(a.minb)
        while s <= a.maxb * 1.0000001:
            size = int(s)
            s *= a.factor
            cnt = size // es
            if op == "all_reduce":
                c, count = cnt, cnt
                local = c  # elements per device
            else:
                c = cnt // n
                count = c * n
                local = c if op == "all_gather" else count
            if c <= 0:
                continue
            f = programs[op]
            me_lo = me * a.local * local
            x = jax.make_array_from_process_local_data(
                split, values(me_lo, me_lo + a.local * local), (n * local,))
            y = None
            for _ in range(a.warmup):
                barrier()
                y = f(x)
                y.block_until_ready()
            times = np.empty(a.iters, np.float64)
            for i in range(a.iters):
                barrier()
                del y
                t0 = time.perf_counter()
                y = f(x)
                y.block_until_ready()
                times[i] = time.perf_counter() - t0
            wrong = 0
            if a.check:
                for sh in y.addressable_shards:
                    got = np.asarray(sh.data)
                    wrong += int(np.count_nonzero(got != expected(op, c, count, sh.index)))
            del x, y
            # Every process's times (us) and wrong count, to every process.
            mine = np.concatenate([times * 1e6, [wrong]]).astype(np.float32)
            allv = np.asarray(multihost_utils.process_allgather(mine)).reshape(a.procs, a.iters + 1)
            per = allv[:, :a.iters].astype(np.float64)
            t = per.max(0) if a.agg == "max" else per.mean(0) if a.agg == "avg" else per[0]
            wrong_all = int(allv[:, a.iters].sum())
            total_wrong += wrong_all
            mean = float(t.mean())
            median = float(np.sort(t)[a.iters // 2])
            reported = count * es
            factor = 2.0 * (n - 1) / n if op == "all_reduce" else (n - 1) / n
            algbw = reported / (mean * 1e-6) / 1e9
            if me == 0:
                print("%14d %13d %9s %15s %11.1f %11.1f %9.2f %9.2f" % (
                    reported, count, "float32", op, mean, median, algbw, algbw * factor), flush=True)
                if wrong_all:
                    print(f"jax_mp_bench.py: {op} at {reported} B: {wrong_all} wrong elements",
                          file=sys.stderr, flush=True)
    barrier()
    if total_wrong:
        print(f"jax_mp_bench.py (process {me}): {total_wrong} wrong elements", file=sys.stderr, flush=True)
        os._exit(3)
    jax.distributed.shutdown()
    return 0


def main():
    argv = sys.argv[1:]
    a = parse_args(argv)
    if a.worker is None:
        return launcher(a, argv)
    try:
        return worker(a)
    except BaseException:
        # Fail at once: a normal exit would wait in jax.distributed's
        # shutdown for the other processes, which wait for this one.
        import traceback
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)


if __name__ == "__main__":
    sys.exit(main())
