#!/usr/bin/env python3
"""Writes the nccl-tests sample logs of tests/link/data from known alpha-beta models.

The logs are made up in the formats all_reduce_perf prints (nccl-tests' src/util.cu and older
src/common.cu); no real log is copied. Every time is alpha + beta x size exactly, then rounded the
way nccl-tests prints it, so the fit of each log must give back its alpha and beta to the printed
precision (tests/link/test_import_nccl_tests.cpp checks that):

  allreduce_8gpu.log     2 processes x 4 GPUs = 8 ranks, newest text layout (root, #wrong)
                         out-of-place alpha 30 us, beta 5e-11 s/B (20 GB/s);
                         in-place     alpha 30 us, beta 4.9e-11 s/B
  allreduce_4gpu_old.log 1 process x 4 GPUs, the older layout (no root, 'error' column, no
                         program line, NCCL INFO lines between rows)
                         alpha 12 us, beta 2.5e-11 s/B (40 GB/s)
  allreduce_na.log       2 ranks, -c 0 (#wrong N/A) and 3 rows whose out-of-place columns are N/A
                         (allreduce_all_na.log: every row's)
                         alpha 8 us, beta 1/(90 GB/s) s/B
  allreduce_16gpu.json   the -J JSON file of 2 processes x 8 GPUs = 16 ranks
                         alpha 45 us, beta 1/(12 GB/s) s/B; one in-place time is "nan"
and the bad inputs named after their defect. Run it from this folder to rewrite them.

These follow measured curves instead of a line (the link model interpolates the samples;
the shapes are those of public logs, the numbers are made here from the formulas in each function):

  allreduce_16gpu_a100_ib.log  2 nodes x 8 A100-SXM4-40GB, one process per GPU, 8 B .. 8 GiB: a
                         36 us latency floor that creeps up to 64 KiB, mid sizes (1-64 MiB) slower
                         than full bandwidth, 88 GB/s algbw to 512 MiB and a faster protocol from
                         1 GiB (127 GB/s), as 16-rank A100 InfiniBand/RoCE runs print
  allreduce_16gpu_h100_noisy.log  2 nodes x 8 H100, 8 B .. 16 GiB, with the timing spikes real
                         small-size rows show (8 B and 256 B take 2-4x their neighbours)
  allreduce_1gpu.log     a one-rank run (1 GPU): busbw 0 everywhere, times of local copies
  allreduce_prepend_rank.log  allreduce_8gpu.log as mpirun -prepend-rank prints it ("[0] " on each line)
  allreduce_tag_output.log    the same under mpirun --tag-output ("[1,0]<stdout>:")
  allreduce_poor_fit.log 4 ranks whose times step from 40 us to 4 ms at 1 MiB (a protocol cliff):
                         no line fits them (R^2 < 0.9)
  allreduce_unknown_type.json  allreduce_16gpu.json with a result of type "complex64"
                         (allreduce_unknown_type.log: allreduce_8gpu.log with a row of that type)
  allreduce_hex_size.log, allreduce_nul_size.log, allreduce_hex_time.log  allreduce_8gpu.log with
                         a size in hex (0x8), a NUL byte after a size, a time in hex-float (0x1p+5)
  allreduce_half_wrong.log  allreduce_8gpu.log with #wrong 0.5 in the 8 B row
  allreduce_srun_label.log  allreduce_8gpu.log as srun --label prints it ("0: " on each line)
  allreduce_time_over_a_day.log, allreduce_size_past_int64.log  allreduce_8gpu.log with a time of
                         86,400,000,001 us, or a size of 2^63 bytes, in the 8 B row
  allreduce_nan_columns.log  allreduce_8gpu.log with nan for the 8 B row's algbw and the 16 B row's
                         #wrong (allreduce_nan_busbw.json: allreduce_16gpu.json's 8 B bus_bw "nan")
"""

import math

GB = 1e9
SIZES = [8 << i for i in range(25)]  # 8 B .. 128 MiB, x2 (-b 8 -e 128M -f 2)


def float_str(value, width):
    """nccl-tests' getFloatStr: as many decimals (2, 1, 0) as fit the width, else exponent."""
    for fmt in ("%*.2f", "%*.1f", "%*.0f"):
        text = fmt % (width, value)
        if len(text) <= width:
            return text
    return "%*.1e" % (width, value) if width >= 7 else "%*.0e" % (width, value)


def time_us(alpha_us, beta_s_per_byte, size):
    return alpha_us + beta_s_per_byte * size * 1e6


def bandwidths(size, t_us, ranks):
    algbw = size / (t_us * 1e-6) / GB
    return algbw, algbw * 2 * (ranks - 1) / ranks


def new_group(t_us, size, ranks, wrong="0"):
    if t_us is None:
        return "  %7s  %6s  %6s  %6s" % ("N/A", "N/A", "N/A", wrong)
    algbw, busbw = bandwidths(size, t_us, ranks)
    return "  %7s  %6s  %6s  %6s" % (float_str(t_us, 7), float_str(algbw, 6), float_str(busbw, 6), wrong)


NEW_HEADER = (
    "#\n"
    "#                                                              out-of-place                       in-place          \n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n")


def new_preamble(program, threads, gpus, min_bytes, max_bytes, check, devices):
    lines = ["# nccl-tests version 2.13.9 nccl-headers=21903 nccl-library=21903",
             "# Collective test starting: %s" % program,
             "# nThread %d nGpus %d minBytes %d maxBytes %d step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
             "validation: %d graph: 0" % (threads, gpus, min_bytes, max_bytes, check),
             "#",
             "# Using devices"]
    for rank, (pid, host, device, bus, name) in enumerate(devices):
        lines.append("#  Rank %2d Group  0 Pid %6d on %10s device %2d [%s] %s" % (rank, pid, host, device, bus, name))
    return "\n".join(lines) + "\n"


def new_footer(program, busbws):
    avg = sum(busbws) / len(busbws) if busbws else 0.0
    return ("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : %g \n#\n# Collective test concluded: %s\n#\n\n"
            % (avg, program))


def h100_devices(hosts, per_host):
    devices = []
    for host_index, host in enumerate(hosts):
        for gpu in range(per_host):
            devices.append((41000 + 100 * host_index, host, gpu, "0000:%02x:00" % (0x18 + 0x10 * gpu),
                            "NVIDIA H100 80GB HBM3"))
    return devices


def allreduce_8gpu():
    ranks, alpha_us = 8, 30.0
    out = new_preamble("all_reduce_perf", 1, 4, 8, 134217728, 1, h100_devices(["node-a01", "node-a02"], 4))
    out += NEW_HEADER
    busbws = []
    for size in SIZES:
        t_out = time_us(alpha_us, 5e-11, size)
        t_in = time_us(alpha_us, 4.9e-11, size)
        busbws.append(bandwidths(size, t_out, ranks)[1])
        out += "%12d  %12d  %8s  %6s  %6s" % (size, size // 4, "float", "sum", "%6i" % -1)
        out += new_group(t_out, size, ranks) + new_group(t_in, size, ranks) + "\n"
    return out + new_footer("all_reduce_perf", busbws)


def allreduce_na(all_na=False):
    ranks, alpha_us, beta = 2, 8.0, 1 / (90 * GB)
    devices = [(5150, "gpubox", gpu, "0000:%02x:00" % (0x3b + gpu), "NVIDIA A100-SXM4-80GB") for gpu in range(2)]
    out = new_preamble("all_reduce_perf", 1, 2, 8, 134217728, 0, devices) + NEW_HEADER
    for size in SIZES:
        t = time_us(alpha_us, beta, size)
        t_out = None if all_na or size in (8, 1024, 1048576) else t  # these rows failed to time
        out += "%12d  %12d  %8s  %6s  %6s" % (size, size // 4, "float", "sum", "%6i" % -1)
        out += new_group(t_out, size, ranks, "N/A") + new_group(t, size, ranks, "N/A") + "\n"
    return out + new_footer("all_reduce_perf", [1.0])


def allgather_8gpu():
    ranks = 8
    out = new_preamble("all_gather_perf", 1, 8, 8, 1048576, 1, h100_devices(["node-b01"], 8)) + NEW_HEADER
    for size in [s for s in SIZES if s >= 64 and s <= 1048576]:
        t = time_us(20.0, 5e-11, size)
        algbw = size / (t * 1e-6) / GB
        busbw = algbw * (ranks - 1) / ranks
        group = "  %7s  %6s  %6s  %6s" % (float_str(t, 7), float_str(algbw, 6), float_str(busbw, 6), "0")
        out += "%12d  %12d  %8s  %6s  %6s" % (size, size // 4 // ranks, "float", "none", "%6i" % -1) + group + group + "\n"
    return out + new_footer("all_gather_perf", [1.0])


OLD_HEADER = (
    "#\n"
    "#                                                     out-of-place                       in-place          \n"
    "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
    "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n")


def old_preamble(gpus, max_bytes):
    lines = ["# nThread 1 nGpus %d minBytes 8 maxBytes %d step: 2(factor) warmup iters: 5 iters: 20 validation: 1 "
             % (gpus, max_bytes), "#", "# Using devices"]
    for gpu in range(gpus):
        lines.append("#   Rank %2d Pid   4242 on    dgx-v17 device %2d [0x%02x] Tesla V100-SXM2-32GB"
                     % (gpu, gpu, 0x15 + 0x1a * gpu))
    return "\n".join(lines) + "\n"


def old_group(t_us, size, ranks, error):
    algbw, busbw = bandwidths(size, t_us, ranks)
    return "  %7.2f  %6.2f  %6.2f  %5s" % (t_us, algbw, busbw, error)


def allreduce_4gpu_old():
    ranks, alpha_us, beta = 4, 12.0, 2.5e-11
    out = old_preamble(4, 33554432) + OLD_HEADER
    out += "dgx-v17:4242:4242 [0] NCCL INFO Launch mode Parallel\n"
    for size in SIZES[:23]:  # 8 B .. 32 MiB
        t = time_us(alpha_us, beta, size)
        out += "%12d  %12d  %6s  %6s" % (size, size // 4, "float", "sum")
        out += old_group(t, size, ranks, "1e-07") + old_group(t, size, ranks, "1e-07") + "\n"
        if size == 65536:
            out += "dgx-v17:4242:4250 [2] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation\n"
    return out + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 11.2416 \n#\n"


def old_layout_rows(redop, count_divisor, ranks, factor):
    out = ""
    for size in SIZES[3:12]:
        t = time_us(15.0, 2.5e-11, size)
        algbw = size / (t * 1e-6) / GB
        group = "  %7.2f  %6.2f  %6.2f  %5s" % (t, algbw, algbw * factor, "0e+00")
        out += "%12d  %12d  %6s  %6s" % (size, size // 4 // count_divisor, "float", redop) + group + group + "\n"
    return out


def allgather_old():
    return old_preamble(4, 16384) + OLD_HEADER + old_layout_rows("none", 4, 4, 0.75) + \
        "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.1 \n#\n"


def reduce_scatter_old():
    return old_preamble(4, 16384) + OLD_HEADER + old_layout_rows("sum", 4, 4, 0.75) + \
        "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.1 \n#\n"


def json_number(value):
    return "\"nan\"" if value is None else "%f" % value


def json_group(t_us, size, ranks):
    if t_us is None:
        return "{\"time\":\"nan\",\"alg_bw\":\"nan\",\"bus_bw\":\"nan\",\"nwrong\":0.000000}"
    algbw, busbw = bandwidths(size, t_us, ranks)
    return "{\"time\":%s,\"alg_bw\":%s,\"bus_bw\":%s,\"nwrong\":0.000000}" % (
        json_number(t_us), json_number(algbw), json_number(busbw))


def allreduce_json(program="./build/all_reduce_perf", ranks=16):
    alpha_us, beta = 45.0, 1 / (12 * GB)
    args = [program, "-b", "8", "-e", "128M", "-f", "2", "-g", "8", "-J", "allreduce.json"]
    devices = ",".join(
        "{\"rank\":%d,\"group\":0,\"pid\":%d,\"hostname\":\"node-c0%d\",\"device\":0,\"device_hex\":\"0000:18:00\","
        "\"device_info\":\"NVIDIA H100 80GB HBM3\"}" % (8 * p, 7300 + p, p + 1) for p in range(2))
    results = []
    for size in SIZES:
        t = time_us(alpha_us, beta, size)
        results.append(
            "{\"size\":%d,\"count\":%d,\"type\":\"float\",\"redop\":\"sum\",\"root\":\"    -1\",\"out_of_place\":%s,"
            "\"in_place\":%s,\"actual_iterations\":20,\"experiment_name\":\"\"}"
            % (size, size // 4, json_group(t, size, ranks), json_group(None if size == 4096 else t, size, ranks)))
    return ("{\"version\":2,\"start_time\":\"2025-03-04 10:11:12\",\"args\":[%s],\"env\":[\"NCCL_DEBUG=WARN\"],"
            "\"nccl_version\":22703,\"config\":{\"nthreads\":1,\"ngpus\":8,\"minimum_bytes\":8,"
            "\"maximum_bytes\":134217728,\"step_factor\":2,\"warmup_iters\":5,\"iterations\":20,"
            "\"aggregated_iterations\":1,\"validation\":1,\"graph\":0,\"blocking_collectives\":\"false\","
            "\"per_iter_timing\":\"false\",\"parallel_init\":\"false\",\"devices\":[%s]},\"results\":[%s],"
            "\"out_of_bounds\":{\"count\":0,\"okay\":\"true\"},\"average_bus_bandwidth\":{\"bandwidth\":9.871234,"
            "\"okay\":\"unchecked\"},\"errors\":[],\"end_time\":\"2025-03-04 10:12:40\"}"
            % (",".join("\"%s\"" % a for a in args), devices, ",".join(results)))


def curve_log(devices, sizes, time_of, threads=1, gpus=1):
    """A text log of the newest layout whose out-of-place and in-place times are time_of(size) (us)."""
    ranks = len(devices)
    out = new_preamble("all_reduce_perf", threads, gpus, sizes[0], sizes[-1], 1, devices) + NEW_HEADER
    busbws = []
    for size in sizes:
        t = time_of(size)
        busbws.append(bandwidths(size, t, ranks)[1])
        out += "%12d  %12d  %8s  %6s  %6s" % (size, size // 4, "float", "sum", "%6i" % -1)
        out += new_group(t, size, ranks) + new_group(t * 0.985, size, ranks) + "\n"
    return out + new_footer("all_reduce_perf", busbws)


def curve_time(size, floor_us, creep_us, algbw_GBps, bump_us, bump_at):
    """floor_us, plus creep_us per doubling up to 64 KiB, plus size / algbw, plus a pipeline-fill bump
    of bump_us x exp(-(log2(size / bump_at))^2 / 8) (mid sizes run below full bandwidth); in us."""
    creep = creep_us * (min(size, 65536).bit_length() - 4)
    bump = bump_us * math.exp(-math.log2(size / bump_at) ** 2 / 8)
    return floor_us + creep + size / (algbw_GBps * GB) * 1e6 + bump


def a100_ib_time(size):
    """36 us floor, 88 GB/s algbw below 1 GiB and 127 GB/s (another protocol) from it, a 60 us bump at 8 MiB."""
    return curve_time(size, 36.0, 0.6, 88.0 if size < 2**30 else 127.0, 60.0, 8 * 2**20)


def a100_ib_devices():
    return [(43 + gpu, "nccl-job-mpiworker-%d" % host, gpu, "0x%02x" % (0x0f + 0x30 * gpu), "NVIDIA A100-SXM4-40GB")
            for host in range(2) for gpu in range(8)]


def h100_noisy_time(size):
    """25 us floor, 250 GB/s algbw, a 40 us bump at 16 MiB; the 8 B and 256 B rows hit a 2.7x and 3.6x spike."""
    return curve_time(size, 25.0, 0.4, 250.0, 40.0, 16 * 2**20) * {8: 2.7, 256: 3.6}.get(size, 1.0)


def one_gpu_log():
    devices = [(2201, "workstation", 0, "0000:01:00", "NVIDIA A100-SXM4-80GB")]
    out = new_preamble("all_reduce_perf", 1, 1, 8, 134217728, 1, devices) + NEW_HEADER
    for size in SIZES:
        t = time_us(4.0, 1 / (675 * GB), size)
        algbw = size / (t * 1e-6) / GB
        group = "  %7s  %6s  %6s  %6s" % (float_str(t, 7), float_str(algbw, 6), float_str(0.0, 6), "0")
        out += "%12d  %12d  %8s  %6s  %6s" % (size, size // 4, "float", "sum", "%6i" % -1) + group + group + "\n"
    return out + new_footer("all_reduce_perf", [0.0])


def poor_fit_time(size):
    return 40.0 if size < 2**20 else 4000.0


def write(name, text):
    with open(name, "w") as out:
        out.write(text)


if __name__ == "__main__":
    good_8 = allreduce_8gpu()
    write("allreduce_8gpu.log", good_8)
    write("allreduce_4gpu_old.log", allreduce_4gpu_old())
    write("allreduce_na.log", allreduce_na())
    good_json = allreduce_json()
    write("allreduce_16gpu.json", good_json + "\n")
    # Bad inputs, each with one defect.
    write("allgather_8gpu.log", allgather_8gpu())
    write("allgather_old.log", allgather_old())
    write("reduce_scatter_old.log", reduce_scatter_old())
    write("allgather.json", allreduce_json("./build/all_gather_perf") + "\n")
    cut = good_8.index("      262144")
    write("allreduce_truncated.log", good_8[:cut + 40])  # mid-row: the run was killed while printing
    write("allreduce_truncated.json", good_json[:len(good_json) // 2])
    table = good_8.index("#\n#   ")
    write("allreduce_header_only.log", good_8[:good_8.index("           8 ")] +
          "node-a01:41000:41000 [0] NCCL WARN Cuda failure 'out of memory'\n")
    write("allreduce_all_na.log", allreduce_na(all_na=True))
    body = good_8[table:]
    write("allreduce_no_ranks.log", body)
    devices8 = "".join(l + "\n" for l in good_8.splitlines() if "  Rank " in l)
    four = allreduce_4gpu_old()
    write("allreduce_bad_busbw.log", four.replace("# Using devices\n", "# Using devices\n" + devices8, 1)
          .replace("".join(l + "\n" for l in four.splitlines() if "   Rank " in l), ""))
    write("allreduce_bad_number.log", good_8.replace("    82.43", "    8z.43", 1))
    write("allreduce_extra_column.log", good_8.replace("     float     sum      -1", "     float     sum   sum     -1", 3))
    first_row = "           8             2  "  # size 8 B, count 2 floats
    write("allreduce_negative_size.log", good_8.replace(first_row, "          -8            -2  ", 1))
    write("allreduce_zero_count.log", good_8.replace(first_row, "           8             0  ", 1))
    # Extremes: a count whose product with 4 bytes wraps 64 bits to the row's 8 bytes
    # (2^62 + 2 floats: 2^64 + 8 bytes), and times of 1e-300 us (subnormal seconds).
    write("allreduce_count_overflow.log",
          good_8.replace(first_row, "           8  4611686018427387906  ", 1))
    # A self-consistent row past the link format's 1 PiB limit (2^60 bytes = 2^58 floats): once
    # imported into a link file that `simulate --link` refused.
    write("allreduce_size_past_limit.log",
          good_8.replace(first_row, "1152921504606846976  288230376151711744  ", 1))
    write("allreduce_tiny_time.log",
          good_8.replace("    30.00    0.00    0.00       0    30.00", "   1e-300    0.00    0.00       0   1e-300", 1))
    # An infinite out-of-place time (text "inf", JSON Infinity): refused as 1e300 is, not skipped
    # as a failed measurement (N/A, nan) is.
    write("allreduce_inf_time.log",
          good_8.replace("    30.00    0.00    0.00       0    30.00", "      inf    0.00    0.00       0    30.00", 1))
    # Other spellings of an infinite time (C's strtod reads them all): "Infinity" in place.
    write("allreduce_infinity_time.log",
          good_8.replace("    30.00    0.00    0.00       0    30.00", " Infinity    0.00    0.00       0    30.00", 1))
    # An infinite bandwidth beside a real time (it was read as N/A and the row kept).
    write("allreduce_inf_algbw.log",
          good_8.replace("    30.00    0.00    0.00       0    30.00", "    30.00     inf    0.00       0    30.00", 1))
    first_time = good_json.index('"time":')
    write("allreduce_inf_time.json",
          good_json[:first_time] + '"time":Infinity' + good_json[good_json.index(",", first_time):] + "\n")
    write("allreduce_two_runs.log", good_8 + good_8)  # two runs appended to one file
    write("allreduce_empty.log", "")
    write("allreduce_version_9.json", good_json.replace("{\"version\":2,", "{\"version\":9,", 1) + "\n")
    write("allreduce_ngpus_zero.json", good_json.replace("\"ngpus\":8,", "\"ngpus\":0,", 1) + "\n")
    # Curves of the shapes of public logs, and the inputs items 2 and 7 refuse or note.
    write("allreduce_16gpu_a100_ib.log", curve_log(a100_ib_devices(), [8 << i for i in range(31)], a100_ib_time))
    write("allreduce_16gpu_h100_noisy.log",
          curve_log(h100_devices(["bm-h100-01", "bm-h100-02"], 8), [8 << i for i in range(32)], h100_noisy_time))
    write("allreduce_1gpu.log", one_gpu_log())
    write("allreduce_prepend_rank.log", "".join("[0] " + l + "\n" for l in good_8.splitlines()))
    write("allreduce_tag_output.log", "".join("[1,0]<stdout>:" + l + "\n" for l in good_8.splitlines()))
    write("allreduce_poor_fit.log", curve_log(h100_devices(["node-p01"], 4), SIZES, poor_fit_time))
    write("allreduce_unknown_type.json",
          good_json.replace("\"type\":\"float\"", "\"type\":\"complex64\"", 1) + "\n")
    # Rows that once read as chatter between rows and were dropped unsaid: a size in hex,
    # and one with a NUL byte after it. Each is a data row with a bad size now.
    write("allreduce_hex_size.log", good_8.replace(first_row, "         0x8             2  ", 1))
    write("allreduce_nul_size.log", good_8.replace(first_row, "           8\0            2  ", 1))
    # A type no nccl-tests program prints (a -J file's was refused, a text row's passed).
    write("allreduce_unknown_type.log", good_8.replace("     float     sum      -1", " complex64     sum      -1", 1))
    # A time in C's hex-float notation: strtod reads it, printf's %f never writes it.
    write("allreduce_hex_time.log",
          good_8.replace("    30.00    0.00    0.00       0    30.00", "   0x1p+5    0.00    0.00       0    30.00", 1))
    # nan beside a real time: the 8 B row's out-of-place algbw, the 16 B row's #wrong (kept, warned);
    # in the -J file the 8 B row's out-of-place bus_bw.
    first_rows = "    30.00    0.00    0.00       0    30.00"
    nan_columns = good_8.replace(first_rows, "    30.00     nan    0.00       0    30.00", 1)
    nan_columns = nan_columns.replace(first_rows, "    30.00    0.00    0.00     nan    30.00", 1)
    write("allreduce_nan_columns.log", nan_columns)
    write("allreduce_nan_busbw.json", good_json.replace('"bus_bw":0.000333,', '"bus_bw":"nan",', 1) + "\n")
    # Slurm's srun --label prefix ("0: " on each line), read as mpirun's tags are.
    write("allreduce_srun_label.log", "".join("0: " + l + "\n" for l in good_8.splitlines()))
    # A time over a day (86,400,000,001 us) in the 8 B row; a size past int64 (2^63) in its own row.
    write("allreduce_time_over_a_day.log",
          good_8.replace("    30.00    0.00    0.00       0    30.00", " 86400000001    0.00    0.00       0    30.00", 1))
    # Half a wrong element in the 8 B row: #wrong is a count.
    write("allreduce_half_wrong.log",
          good_8.replace("    30.00    0.00    0.00       0    30.00", "    30.00    0.00    0.00     0.5    30.00", 1))
    write("allreduce_size_past_int64.log",
          good_8.replace(first_row, "9223372036854775808  2305843009213693952  ", 1))
