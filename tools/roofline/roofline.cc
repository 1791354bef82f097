//===- roofline.cc - This machine's peak FLOP/s and memory bandwidth ------===//
//
// The two ceilings of a roofline (python/tfpgo/tune/roofline.py), measured on
// all cores: the rate of arithmetic and the rate of memory traffic. A
// dispatch cannot run faster than its FLOPs at the first or its bytes at the
// second.
//
//   roofline [--threads N] [--repeat R] [--seconds S] [--array-mib M]
//
// Peak FLOP/s: each thread runs kChains independent chains of fused
// multiply-adds in vector registers of the widest type compiled in (AVX-512,
// else AVX2 + FMA, else SSE2's multiply then add), enough chains to hide the
// FMA latency of every x86 core (4 cycles, 2 pipes: 8 in flight). One FMA
// counts as 2 FLOPs; a bf16 dot product (AVX512-BF16 `vdpbf16ps`: two
// products added into an f32 lane) as 4 per lane. f32 and f64 always; bf16
// and f16 only where the CPU has them natively (`__AVX512BF16__`,
// `__AVX512FP16__` under -march=native), else the JSON names them in
// `not_native` with the reason. Each repetition runs every thread for about
// --seconds (the iterations calibrated on one thread first); the best
// repetition is reported. Many short repetitions: on a shared machine, some
// catch the cores free.
//
// Bandwidth: STREAM's copy (c = a) and triad (a = b + s * c) on arrays of
// doubles, each max(4 x the last-level cache, 256 MiB) unless --array-mib
// says, split in equal parts between the threads, first touched by the thread
// that uses them. Bytes count as STREAM counts them, read plus written (16
// and 24 per element; a store's write-allocate read is not counted). Best of
// 2 x --repeat passes.
//
// Threads are started per repetition and released together; the time is the
// wall time from the release to the last thread's end, on the main thread.
// With each best figure comes its repetition's `cpu_share`: the process's CPU
// time over wall time x threads. Below 1, other processes ran on the cores and
// the figure is below the machine's.
//
// Output, one JSON object on stdout (docs/formats.md, format tfpgo.roofline):
//   {"format": "tfpgo.roofline", "version": 1, "cpu": "<cpuid brand>",
//    "isa": "avx512"|"avx2"|"sse2", "threads": N, "repeat": R,
//    "peak_gflops": {"f32": .., "f64": .., "bf16": ..},
//    "not_native": {"f16": "<why>"},
//    "bandwidth_gbs": {"copy": .., "triad": ..},
//    "cpu_share": {"f32": .., "f64": .., "bf16": .., "copy": .., "triad": ..},
//    "array_bytes": .., "llc_bytes": ..}
// Bad flags: usage on stderr, exit status 2; no memory: one line, status 1.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cpuid.h>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <immintrin.h>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <utility>
#include <vector>

namespace {

/// Independent accumulator chains a thread keeps in registers.
constexpr int kChains = 12;
/// Arrays are at least this large, and 4 x the last-level cache.
constexpr size_t kMinArrayBytes = size_t(256) << 20;

using Clock = std::chrono::steady_clock;

/// What the command line asks for.
struct Options {
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  int repeat = 10;
  double seconds = 0.1;
  size_t arrayBytes = 0; // 0: from the last-level cache
};

/// Keeps results alive so that the compiler cannot drop the work.
volatile double gSink;

/// Seconds of CPU time this process has used, all threads.
double processCpuSeconds() {
  timespec now;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return double(now.tv_sec) + double(now.tv_nsec) * 1e-9;
}

/// One run of every thread: its wall seconds, and the share of `threads`
/// cores its threads had meanwhile (below 1: others ran on them too).
struct Run {
  double wall;
  double cpuShare;
};

/// The best rate of several runs, and the CPU share of the run that gave it.
struct Best {
  double rate = 0;
  double cpuShare = 0;
  void offer(double runRate, const Run &run) {
    if (runRate <= rate)
      return;
    rate = runRate;
    cpuShare = run.cpuShare;
  }
};

/// Runs `work(thread)` on `threads` threads released together; times it from
/// the release to the end of the last one.
template <typename Work> Run runTogether(unsigned threads, Work work) {
  std::atomic<unsigned> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire))
        std::this_thread::yield();
      work(t);
    });
  while (ready.load() < threads)
    std::this_thread::yield();
  double cpuStart = processCpuSeconds();
  auto start = Clock::now();
  go.store(true, std::memory_order_release);
  for (std::thread &thread : pool)
    thread.join();
  double wall = std::chrono::duration<double>(Clock::now() - start).count();
  return {wall, (processCpuSeconds() - cpuStart) / (wall * threads)};
}

/// kChains chains of `step` over `iterations` rounds, chain j started at
/// `seed(j)`; returns one lane of their sum. Written out so that every chain
/// stays in a register whatever the compiler unrolls; the seeds differ so that
/// the compiler cannot fold identical chains into one.
template <typename Seed, typename Step, typename Lane>
double runChains(Seed seed, long iterations, Step step, Lane lane) {
  auto a0 = seed(0), a1 = seed(1), a2 = seed(2), a3 = seed(3), a4 = seed(4);
  auto a5 = seed(5), a6 = seed(6), a7 = seed(7), a8 = seed(8), a9 = seed(9);
  auto a10 = seed(10), a11 = seed(11);
  for (long i = 0; i < iterations; ++i) {
    a0 = step(a0);
    a1 = step(a1);
    a2 = step(a2);
    a3 = step(a3);
    a4 = step(a4);
    a5 = step(a5);
    a6 = step(a6);
    a7 = step(a7);
    a8 = step(a8);
    a9 = step(a9);
    a10 = step(a10);
    a11 = step(a11);
  }
  return lane(a0) + lane(a1) + lane(a2) + lane(a3) + lane(a4) + lane(a5) +
         lane(a6) + lane(a7) + lane(a8) + lane(a9) + lane(a10) + lane(a11);
}

/// Best GFLOP/s of `options.repeat` repetitions of the chains on every
/// thread; `flopsPerStep` is what one `step` of one chain computes.
template <typename Seed, typename Step, typename Lane>
Best peakGflops(const Options &options, Seed seed, Step step, Lane lane,
                double flopsPerStep) {
  long iterations = 1 << 14;
  for (;;) { // calibrate: one thread, about a tenth of the target time
    auto start = Clock::now();
    gSink = runChains(seed, iterations, step, lane);
    double took = std::chrono::duration<double>(Clock::now() - start).count();
    if (took >= options.seconds / 10 || iterations > (1L << 40)) {
      took = std::max(took, 1e-9);
      iterations = std::max(1L, long(iterations * options.seconds / took));
      break;
    }
    iterations *= 4;
  }
  Best best;
  for (int r = 0; r < options.repeat; ++r) {
    std::vector<double> sums(options.threads);
    Run run = runTogether(options.threads, [&](unsigned t) {
      sums[t] = runChains(seed, iterations, step, lane);
    });
    for (double sum : sums)
      gSink = gSink + sum;
    double flops =
        double(options.threads) * double(iterations) * kChains * flopsPerStep;
    best.offer(flops / run.wall / 1e9, run);
  }
  return best;
}

#if defined(__AVX512F__)
constexpr const char *kIsa = "avx512";
#elif defined(__AVX2__) && defined(__FMA__)
constexpr const char *kIsa = "avx2";
#else
constexpr const char *kIsa = "sse2";
#endif

/// Peak GFLOP/s per element type measured, and why the others are not.
struct Peaks {
  std::vector<std::pair<std::string, Best>> gflops;
  std::vector<std::pair<std::string, std::string>> notNative;
};

Peaks measurePeaks(const Options &options) {
  Peaks peaks;
#if defined(__AVX512F__)
  __m512 mulF = _mm512_set1_ps(0.999999f), addF = _mm512_set1_ps(1e-6f);
  peaks.gflops.emplace_back(
      "f32",
      peakGflops(
          options, [](int j) { return _mm512_set1_ps(1.0f + j / 64.0f); },
          [=](__m512 a) { return _mm512_fmadd_ps(a, mulF, addF); },
          [](__m512 a) { return double(_mm512_cvtss_f32(a)); }, 2 * 16));
  __m512d mulD = _mm512_set1_pd(0.999999), addD = _mm512_set1_pd(1e-6);
  peaks.gflops.emplace_back(
      "f64", peakGflops(
                 options, [](int j) { return _mm512_set1_pd(1.0 + j / 64.0); },
                 [=](__m512d a) { return _mm512_fmadd_pd(a, mulD, addD); },
                 [](__m512d a) { return _mm512_cvtsd_f64(a); }, 2 * 8));
#elif defined(__AVX2__) && defined(__FMA__)
  __m256 mulF = _mm256_set1_ps(0.999999f), addF = _mm256_set1_ps(1e-6f);
  peaks.gflops.emplace_back(
      "f32",
      peakGflops(
          options, [](int j) { return _mm256_set1_ps(1.0f + j / 64.0f); },
          [=](__m256 a) { return _mm256_fmadd_ps(a, mulF, addF); },
          [](__m256 a) { return double(_mm256_cvtss_f32(a)); }, 2 * 8));
  __m256d mulD = _mm256_set1_pd(0.999999), addD = _mm256_set1_pd(1e-6);
  peaks.gflops.emplace_back(
      "f64", peakGflops(
                 options, [](int j) { return _mm256_set1_pd(1.0 + j / 64.0); },
                 [=](__m256d a) { return _mm256_fmadd_pd(a, mulD, addD); },
                 [](__m256d a) { return _mm256_cvtsd_f64(a); }, 2 * 4));
#else
  __m128 mulF = _mm_set1_ps(0.999999f), addF = _mm_set1_ps(1e-6f);
  peaks.gflops.emplace_back(
      "f32",
      peakGflops(
          options, [](int j) { return _mm_set1_ps(1.0f + j / 64.0f); },
          [=](__m128 a) { return _mm_add_ps(_mm_mul_ps(a, mulF), addF); },
          [](__m128 a) { return double(_mm_cvtss_f32(a)); }, 2 * 4));
  __m128d mulD = _mm_set1_pd(0.999999), addD = _mm_set1_pd(1e-6);
  peaks.gflops.emplace_back(
      "f64",
      peakGflops(
          options, [](int j) { return _mm_set1_pd(1.0 + j / 64.0); },
          [=](__m128d a) { return _mm_add_pd(_mm_mul_pd(a, mulD), addD); },
          [](__m128d a) { return _mm_cvtsd_f64(a); }, 2 * 2));
#endif
#if defined(__AVX512BF16__)
  // Each of the 16 f32 lanes adds two bf16 products: 4 FLOPs a lane.
  __m512bh one = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1.0f), _mm512_set1_ps(1));
  __m512bh tiny =
      _mm512_cvtne2ps_pbh(_mm512_set1_ps(0x1p-20f), _mm512_set1_ps(0x1p-20f));
  peaks.gflops.emplace_back(
      "bf16",
      peakGflops(
          options, [](int j) { return _mm512_set1_ps(1.0f + j / 64.0f); },
          [=](__m512 a) { return _mm512_dpbf16_ps(a, one, tiny); },
          [](__m512 a) { return double(_mm512_cvtss_f32(a)); }, 4 * 16));
#else
  peaks.notNative.emplace_back("bf16",
                               "no native bf16 arithmetic (__AVX512BF16__ "
                               "undefined under the build's -march)");
#endif
#if defined(__AVX512FP16__)
  __m512h mulH = _mm512_set1_ph(_Float16(0.999f));
  __m512h addH = _mm512_set1_ph(_Float16(0.001f));
  peaks.gflops.emplace_back(
      "f16",
      peakGflops(
          options,
          [](int j) { return _mm512_set1_ph(_Float16(1.0f + j / 64.0f)); },
          [=](__m512h a) { return _mm512_fmadd_ph(a, mulH, addH); },
          [](__m512h a) { return double(_mm512_cvtsh_h(a)); }, 2 * 32));
#else
  peaks.notNative.emplace_back("f16",
                               "no native f16 arithmetic (__AVX512FP16__ "
                               "undefined under the build's -march)");
#endif
  return peaks;
}

/// Memory that THP may back with huge pages (fewer TLB misses, as a
/// compiled program's large buffers get); nullptr when there is none.
double *allocateDoubles(size_t count) {
  constexpr size_t kHugePage = size_t(2) << 20;
  size_t bytes =
      (count * sizeof(double) + kHugePage - 1) / kHugePage * kHugePage;
  void *memory = std::aligned_alloc(kHugePage, bytes);
  if (memory)
    madvise(memory, bytes, MADV_HUGEPAGE);
  return static_cast<double *>(memory);
}

/// Elements [begin, end) of thread `t` of `threads` over `count` elements,
/// each part a multiple of 8 (one 64-byte vector).
std::pair<size_t, size_t> part(size_t count, unsigned t, unsigned threads) {
  size_t vectors = count / 8;
  return {vectors * t / threads * 8, vectors * (t + 1) / threads * 8};
}

/// Eight doubles, one AVX-512 register (two AVX2 ones); GCC's vector type.
typedef double Doubles __attribute__((vector_size(64)));

/// STREAM's copy and triad: best GB/s of 2 x `repeat` passes each.
std::pair<Best, Best> measureBandwidth(const Options &options, size_t count) {
  double *a = allocateDoubles(count), *b = allocateDoubles(count),
         *c = allocateDoubles(count);
  if (!a || !b || !c) {
    std::fprintf(stderr, "roofline: cannot allocate 3 arrays of %zu MiB\n",
                 count * sizeof(double) >> 20);
    std::exit(1);
  }
  unsigned threads = options.threads;
  runTogether(threads, [&](unsigned t) { // first touch by the user thread
    auto [begin, end] = part(count, t, threads);
    for (size_t i = begin; i < end; ++i) {
      a[i] = 1.0;
      b[i] = 2.0;
      c[i] = 0.0;
    }
  });
  auto vectors = [&](double *array, unsigned t) {
    auto [begin, end] = part(count, t, threads);
    return std::make_pair(reinterpret_cast<Doubles *>(array + begin),
                          (end - begin) / 8);
  };
  Best copy, triad;
  double scalar = 3.0, bytes = sizeof(double) * double(count);
  for (int r = 0; r < 2 * options.repeat; ++r) {
    Run run = runTogether(threads, [&](unsigned t) {
      auto [from, n] = vectors(a, t);
      Doubles *to = vectors(c, t).first;
      for (size_t i = 0; i < n; ++i)
        to[i] = from[i];
    });
    copy.offer(2 * bytes / run.wall / 1e9, run);
    run = runTogether(threads, [&](unsigned t) {
      auto [out, n] = vectors(a, t);
      Doubles *x = vectors(b, t).first, *y = vectors(c, t).first;
      for (size_t i = 0; i < n; ++i)
        out[i] = x[i] + scalar * y[i];
    });
    triad.offer(3 * bytes / run.wall / 1e9, run);
  }
  gSink = a[count / 2] + c[count / 3];
  std::free(a), std::free(b), std::free(c);
  return {copy, triad};
}

/// The last-level cache in bytes (the highest level in sysfs), else 32 MiB.
size_t lastLevelCacheBytes() {
  size_t best = 0;
  int bestLevel = 0;
  for (int index = 0; index < 8; ++index) {
    std::string dir =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    std::ifstream levelFile(dir + "/level"), sizeFile(dir + "/size");
    int level = 0;
    std::string size;
    if (!(levelFile >> level) || !(sizeFile >> size) || level < bestLevel)
      continue;
    size_t value = std::strtoull(size.c_str(), nullptr, 10);
    char unit = size.empty() ? 0 : size.back();
    value <<= unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : 0;
    best = level > bestLevel ? value : std::max(best, value);
    bestLevel = level;
  }
  return best ? best : size_t(32) << 20;
}

/// The CPU's brand string (CPUID 0x80000002-4), trimmed.
std::string cpuName() {
  unsigned words[12] = {};
  for (unsigned leaf = 0; leaf < 3; ++leaf)
    if (!__get_cpuid(0x80000002 + leaf, &words[4 * leaf], &words[4 * leaf + 1],
                     &words[4 * leaf + 2], &words[4 * leaf + 3]))
      return "unknown";
  std::string name(reinterpret_cast<const char *>(words), sizeof(words));
  name = name.c_str(); // up to the first NUL
  size_t first = name.find_first_not_of(' ');
  size_t last = name.find_last_not_of(' ');
  return first == std::string::npos ? "unknown"
                                    : name.substr(first, last - first + 1);
}

/// `text` as a JSON string (quotes, backslashes and control bytes escaped).
std::string quoted(const std::string &text) {
  std::string out = "\"";
  for (unsigned char ch : text) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += char(ch);
    } else if (ch < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", ch);
      out += escaped;
    } else {
      out += char(ch);
    }
  }
  return out + "\"";
}

int usage() {
  std::fprintf(stderr, "usage: roofline [--threads N] [--repeat R] "
                       "[--seconds S] [--array-mib M]\n");
  return 2;
}

/// Parses the flags into `options`; false on anything else.
bool parse(int argc, char **argv, Options &options) {
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (i + 1 >= argc)
      return false;
    char *end = nullptr;
    const char *value = argv[++i];
    double number = std::strtod(value, &end);
    if (end == value || *end || !(number > 0) || number > 1e6)
      return false;
    if (flag == "--threads")
      options.threads = unsigned(number);
    else if (flag == "--repeat")
      options.repeat = int(number);
    else if (flag == "--seconds")
      options.seconds = number;
    else if (flag == "--array-mib")
      options.arrayBytes = size_t(number * (1 << 20));
    else
      return false;
  }
  return options.threads >= 1 && options.repeat >= 1 &&
         options.arrayBytes % sizeof(double) == 0;
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  if (!parse(argc, argv, options))
    return usage();
  size_t llc = lastLevelCacheBytes();
  size_t arrayBytes = options.arrayBytes ? options.arrayBytes
                                         : std::max(4 * llc, kMinArrayBytes);
  size_t count = arrayBytes / sizeof(double) / 8 * 8;
  Peaks peaks = measurePeaks(options);
  auto [copy, triad] = measureBandwidth(options, count);

  std::vector<std::pair<std::string, Best>> all = peaks.gflops;
  all.emplace_back("copy", copy);
  all.emplace_back("triad", triad);
  std::printf("{\"format\": \"tfpgo.roofline\", \"version\": 1, \"cpu\": %s, "
              "\"isa\": \"%s\", \"threads\": %u, \"repeat\": %d, "
              "\"peak_gflops\": {",
              quoted(cpuName()).c_str(), kIsa, options.threads, options.repeat);
  for (size_t i = 0; i < peaks.gflops.size(); ++i)
    std::printf("%s\"%s\": %.3f", i ? ", " : "", peaks.gflops[i].first.c_str(),
                peaks.gflops[i].second.rate);
  std::printf("}, \"not_native\": {");
  for (size_t i = 0; i < peaks.notNative.size(); ++i)
    std::printf("%s\"%s\": %s", i ? ", " : "", peaks.notNative[i].first.c_str(),
                quoted(peaks.notNative[i].second).c_str());
  std::printf("}, \"bandwidth_gbs\": {\"copy\": %.3f, \"triad\": %.3f}, "
              "\"cpu_share\": {",
              copy.rate, triad.rate);
  for (size_t i = 0; i < all.size(); ++i)
    std::printf("%s\"%s\": %.3f", i ? ", " : "", all[i].first.c_str(),
                all[i].second.cpuShare);
  std::printf("}, \"array_bytes\": %zu, \"llc_bytes\": %zu}\n",
              count * sizeof(double), llc);
  return 0;
}
