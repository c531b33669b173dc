// Both directions' top-k of one similarity tile in one read, for XLA:CPU.
//
// XLA:CPU reads a [Q, C] tile once per reduction (it does not fuse sibling
// reductions), then runs each top-k and the candidates' gather as separate
// ops: at d = 256 the two directions cost about half the tile's product.
// Here each worker scans rows of the tile once, comparing every element
// with its row's and its column's current k-th best (both thresholds rise
// fast, so almost every element fails both and costs two compares); the
// rare element that passes is inserted into its sorted list.
//
// Results equal `lax.top_k` of each row over its first n_ok columns and of
// each column over its first q_ok rows, the rest counting as -inf: values
// descending, ties to the lower position, and where fewer than k positions
// are real, the first masked positions follow with -inf. A row's elements
// not above its `floor` (the k-th of the search's running top-k, which they
// could not pass) count as -inf too: later tiles then insert almost none.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <vector>

#include "xla/ffi/api/ffi.h"

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

namespace ffi = xla::ffi;

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr int64_t kChunkRows = 128;  // rows a worker takes at a time
// Elements are tested kBlock at a time, then a block that passes kLanes at
// a time, then only the elements that passed. In the portable loop a test
// ends in a vector reduction: tests of 16 scanned 2.4x slower than tests
// of 64 (with AVX-512 masks 32, 64 and 128 scan alike).
constexpr int64_t kBlock = 64;
constexpr int64_t kLanes = 16;
// Rows per group of `ColumnBounds`, elements per group of `RowBound`.
constexpr int64_t kBoundRows = 128;
constexpr int64_t kBoundCols = 16;

// Puts (v, p) into top[0, k) (descending) after every entry >= v: entries
// come in increasing position within a list, so ties keep the earlier.
// The caller has checked v > top[k - 1].
inline void Insert(float* top, int32_t* pos, int64_t k, float v, int32_t p) {
  int64_t at = k - 1;
  for (; at > 0 && top[at - 1] < v; --at) {
    top[at] = top[at - 1];
    pos[at] = pos[at - 1];
  }
  top[at] = v;
  pos[at] = p;
}

// One worker's column lists: [C, k] values and positions, and each
// column's k-th value apart, contiguous for the compares.
struct Columns {
  Columns(const std::vector<float>& bound, int64_t k)
      : top(bound.size() * k, kNegInf), pos(bound.size() * k, -1),
        kth(bound) {}
  std::vector<float> top;
  std::vector<int32_t> pos;
  std::vector<float> kth;
};

#if defined(__AVX2__) && !defined(__AVX512F__)
// All ones in lane l where element l of 8 passes its row's or its
// column's k-th value: AVX2 compares give vectors, not masks.
template <bool kRow, bool kCol>
inline __m256 Passing8(const float* __restrict x,
                       const float* __restrict ckth, float rkth) {
  const __m256 v = _mm256_loadu_ps(x);
  __m256 pass = _mm256_setzero_ps();
  if constexpr (kRow) {
    pass = _mm256_or_ps(
        pass, _mm256_cmp_ps(v, _mm256_set1_ps(rkth), _CMP_GT_OQ));
  }
  if constexpr (kCol) {
    pass = _mm256_or_ps(
        pass, _mm256_cmp_ps(v, _mm256_loadu_ps(ckth), _CMP_GT_OQ));
  }
  return pass;
}
#endif

// Bit l set where element l of kLanes passes its row's or its column's
// k-th value.
template <bool kRow, bool kCol>
inline uint32_t Passing(const float* __restrict x,
                        const float* __restrict ckth, float rkth) {
#if defined(__AVX512F__)
  // One compare into a mask register. The portable loop below vectorizes
  // too, but then reduces the vector to the mask: the kernel alone took
  // 16.5-17.0 ms for an [8192, 7168] tile where AVX-512 took 12.2 and
  // AVX2's movemask 13.0 (builds for each, 2 AMD EPYC cores).
  const __m512 v = _mm512_loadu_ps(x);
  __mmask16 mask = 0;
  if constexpr (kRow) {
    mask |= _mm512_cmp_ps_mask(v, _mm512_set1_ps(rkth), _CMP_GT_OQ);
  }
  if constexpr (kCol) {
    mask |= _mm512_cmp_ps_mask(v, _mm512_loadu_ps(ckth), _CMP_GT_OQ);
  }
  return mask;
#elif defined(__AVX2__)
  return _mm256_movemask_ps(Passing8<kRow, kCol>(x, ckth, rkth)) |
         _mm256_movemask_ps(Passing8<kRow, kCol>(x + 8, ckth + 8, rkth)) << 8;
#else
  uint32_t mask = 0;
  for (int64_t l = 0; l < kLanes; ++l) {
    uint32_t pass = 0;
    if constexpr (kRow) pass |= x[l] > rkth;
    if constexpr (kCol) pass |= x[l] > ckth[l];
    mask |= pass << l;
  }
  return mask;
#endif
}

// Whether any of kBlock elements passes (an int reduction, which GCC and
// Clang vectorize; with AVX-512 or AVX2 the compares of `Passing`).
template <bool kRow, bool kCol>
inline bool Hit(const float* __restrict x, const float* __restrict ckth,
                float rkth) {
#if defined(__AVX512F__)
  uint32_t mask = 0;
  for (int64_t l = 0; l < kBlock; l += kLanes) {
    mask |= Passing<kRow, kCol>(x + l, ckth + l, rkth);
  }
  return mask;
#elif defined(__AVX2__)
  // The block's compares OR-ed, one movemask for all 64.
  __m256 pass = _mm256_setzero_ps();
  for (int64_t l = 0; l < kBlock; l += 8) {
    pass = _mm256_or_ps(pass, Passing8<kRow, kCol>(x + l, ckth + l, rkth));
  }
  return _mm256_movemask_ps(pass);
#else
  int hit = 0;
  for (int64_t l = 0; l < kBlock; ++l) {
    if constexpr (kRow) hit |= x[l] > rkth;
    if constexpr (kCol) hit |= x[l] > ckth[l];
  }
  return hit;
#endif
}

// What a row's scan writes to: its own list and floor, and its worker's
// column lists.
struct Lists {
  float* rtop;
  int32_t* rpos;
  int64_t rk;
  float floor;  // the row's elements must pass it too
  Columns& c;
  int64_t ck;
};

// Element j of row i, which may pass: into the row's list (kRow) and its
// column's (kCol). Returns the row's k-th value.
template <bool kRow, bool kCol>
float Visit(const float* row, int64_t j, int32_t i, float rkth, Lists& at) {
  const float v = row[j];
  if (kRow && v > rkth) {
    Insert(at.rtop, at.rpos, at.rk, v, static_cast<int32_t>(j));
    rkth = std::max(at.floor, at.rtop[at.rk - 1]);
  }
  if (kCol && v > at.c.kth[j]) {
    Insert(&at.c.top[j * at.ck], &at.c.pos[j * at.ck], at.ck, v, i);
    at.c.kth[j] = std::max(at.c.kth[j], at.c.top[j * at.ck + at.ck - 1]);
  }
  return rkth;
}

// The kBlock elements from j of row i that passed `Hit`. Kept out of the
// scan's loop, which then holds its values in registers.
template <bool kRow, bool kCol>
[[gnu::noinline]] float VisitBlock(const float* row, int64_t j, int32_t i,
                                   float rkth, Lists& at) {
  for (int64_t l = j; l < j + kBlock; l += kLanes) {
    // Thresholds only rise: a lane that fails now cannot pass later in the
    // row; one that passed is tested again by `Visit`.
    for (uint32_t m = Passing<kRow, kCol>(row + l, at.c.kth.data() + l, rkth);
         m; m &= m - 1) {
      rkth = Visit<kRow, kCol>(row, l + __builtin_ctz(m), i, rkth, at);
    }
  }
  return rkth;
}

// Elements [j0, j1) of row i: into the row's list (kRow) and the columns'
// lists (kCol).
template <bool kRow, bool kCol>
void ScanRow(const float* row, int64_t j0, int64_t j1, int32_t i, Lists& at) {
  float rkth = std::max(at.floor, at.rtop[at.rk - 1]);
  const float* ckth = at.c.kth.data();
  int64_t j = j0;
  for (; j + kBlock <= j1; j += kBlock) {
    if (Hit<kRow, kCol>(row + j, ckth + j, rkth)) {
      rkth = VisitBlock<kRow, kCol>(row, j, i, rkth, at);
    }
  }
  for (; j < j1; ++j) rkth = Visit<kRow, kCol>(row, j, i, rkth, at);
}

// The largest float the kernel reads as below `v`. XLA:CPU runs with
// denormals read as zero, so below 0 (a zero embedding's row of cosines)
// that is the least normal float below it, not a denormal: else no element
// of the row passes and the row's list stays -inf.
float Below(float v) {
  const float below = std::nextafter(v, kNegInf);
  return below < v ? below : v - std::numeric_limits<float>::min();
}

// What an element of a row must pass, at least, as `ColumnBounds` for a
// column: the largest float below the least of the maxima of k groups of
// its first elements. Without it a row with no floor (every row of a
// search's first tile, of every tile where each device holds one shard)
// inserts most of its first block before its k-th rises: the kernel alone
// on an [8192, 7168] tile without floors 11.8-12.5 ms, with the bound
// 11.2-11.4 (lab/benchmarks/mining_tile_profile.py, 2 AMD EPYC cores).
float RowBound(const float* row, int64_t n_ok, int64_t k) {
  if (n_ok < k * kBoundCols) return kNegInf;
  float least = std::numeric_limits<float>::infinity();
  for (int64_t g = 0; g < k; ++g) {
    float group_max = kNegInf;
    for (int64_t j = g * kBoundCols; j < (g + 1) * kBoundCols; ++j) {
      group_max = std::max(group_max, row[j]);
    }
    least = std::min(least, group_max);
  }
  return Below(least);
}

// Rows [r0, r1): each row's list in the outputs, the columns' in `c`.
void ScanRows(const float* s, int64_t cols, int64_t r0, int64_t r1,
              int64_t n_ok, int64_t q_ok, const float* floor, float* rtop,
              int32_t* rpos, int64_t rk, Columns& c, int64_t ck) {
  const int64_t real_cols = std::clamp<int64_t>(n_ok, 0, cols);
  for (int64_t i = r0; i < r1; ++i) {
    const float* row = s + i * cols;
    Lists at{rtop + i * rk, rpos + i * rk, rk,
             std::max(floor[i], RowBound(row, real_cols, rk)), c, ck};
    std::fill(at.rtop, at.rtop + rk, kNegInf);
    const int32_t pos = static_cast<int32_t>(i);
    if (i < q_ok) {
      ScanRow<true, true>(row, 0, real_cols, pos, at);
      ScanRow<false, true>(row, real_cols, cols, pos, at);
    } else {
      ScanRow<true, false>(row, 0, real_cols, pos, at);
    }
  }
}

// What an element of each column must pass, at least: the largest float
// below the least of the maxima of k groups of the first real rows. The k
// maxima are k elements of the column, so its k-th is at least that least
// one, and an element below it can never enter: the columns' lists, which
// start empty in every tile, then skip most of the insertions of the
// tile's first rows. -inf where there are too few real rows.
std::vector<float> ColumnBounds(const float* s, int64_t cols, int64_t q_ok,
                                int64_t k) {
  std::vector<float> bound(cols, kNegInf);
  if (q_ok < k * kBoundRows) return bound;
  std::vector<float> group_max(cols);
  for (int64_t g = 0; g < k; ++g) {
    std::fill(group_max.begin(), group_max.end(), kNegInf);
    for (int64_t i = g * kBoundRows; i < (g + 1) * kBoundRows; ++i) {
      const float* row = s + i * cols;
      for (int64_t j = 0; j < cols; ++j) {
        group_max[j] = std::max(group_max[j], row[j]);
      }
    }
    for (int64_t j = 0; j < cols; ++j) {
      bound[j] = g ? std::min(bound[j], group_max[j]) : group_max[j];
    }
  }
  for (float& b : bound) b = Below(b);
  return bound;
}

// Entries still -inf take the first masked positions, as `lax.top_k` of a
// row whose positions from n_ok on are -inf.
void FillMasked(float* top, int32_t* pos, int64_t k, int64_t n_ok) {
  int64_t next = std::max<int64_t>(n_ok, 0);
  for (int64_t e = 0; e < k; ++e) {
    if (top[e] == kNegInf) pos[e] = static_cast<int32_t>(next++);
  }
}

// The workers' lists of column j merged into out: higher value first, the
// lower position on ties (a worker's rows are not all below another's).
void MergeColumn(const std::vector<Columns>& parts, int64_t j, int64_t k,
                 float* out_top, int32_t* out_pos) {
  std::vector<size_t> at(parts.size(), 0);
  for (int64_t e = 0; e < k; ++e) {
    size_t best = 0;
    for (size_t w = 1; w < parts.size(); ++w) {
      const float v = parts[w].top[j * k + at[w]];
      const float b = parts[best].top[j * k + at[best]];
      if (v > b || (v == b && parts[w].pos[j * k + at[w]] <
                                  parts[best].pos[j * k + at[best]])) {
        best = w;
      }
    }
    out_top[e] = parts[best].top[j * k + at[best]];
    out_pos[e] = parts[best].pos[j * k + at[best]];
    ++at[best];
  }
}

// Work shared by the caller and the tasks it schedules: chunks of rows
// taken in increasing order. A task that starts after the call returned
// finds no chunk left; the state lives as long as the last task.
struct Job {
  std::atomic<int64_t> next_chunk{0};
  int64_t chunks = 0;
  std::atomic<int64_t> done{0};
  std::mutex mu;
  std::condition_variable all_done;
};

ffi::Error BothTopKImpl(ffi::ThreadPool pool, ffi::Buffer<ffi::F32> s,
                        ffi::Buffer<ffi::S32> n_ok, ffi::Buffer<ffi::S32> q_ok,
                        ffi::Buffer<ffi::F32> floor,
                        ffi::ResultBuffer<ffi::F32> row_top,
                        ffi::ResultBuffer<ffi::S32> row_pos,
                        ffi::ResultBuffer<ffi::F32> col_top,
                        ffi::ResultBuffer<ffi::S32> col_pos, int64_t workers) {
  const auto dims = s.dimensions();
  if (dims.size() != 2) {
    return ffi::Error::InvalidArgument("both_top_k: the tile must be 2-D");
  }
  const int64_t rows = dims[0], cols = dims[1];
  const int64_t rk = row_top->dimensions()[1];
  const int64_t ck = col_top->dimensions()[1];
  if (rk < 1 || rk > cols || ck < 1 || ck > rows) {
    return ffi::Error::InvalidArgument("both_top_k: k out of range");
  }
  if (static_cast<int64_t>(floor.element_count()) != rows) {
    return ffi::Error::InvalidArgument("both_top_k: one floor per row");
  }
  const int64_t n = n_ok.typed_data()[0], q = q_ok.typed_data()[0];
  const float* data = s.typed_data();
  float* rtop = row_top->typed_data();
  int32_t* rpos = row_pos->typed_data();

  workers = std::max<int64_t>(1, workers);
  std::vector<Columns> parts;
  parts.reserve(workers);
  const std::vector<float> bound = ColumnBounds(data, cols, q, ck);
  for (int64_t w = 0; w < workers; ++w) parts.emplace_back(bound, ck);

  auto job = std::make_shared<Job>();
  job->chunks = (rows + kChunkRows - 1) / kChunkRows;
  auto work = [=, &parts](int64_t w) {
    for (int64_t chunk; (chunk = job->next_chunk++) < job->chunks;) {
      const int64_t r0 = chunk * kChunkRows;
      ScanRows(data, cols, r0, std::min(rows, r0 + kChunkRows), n, q,
               floor.typed_data(), rtop, rpos, rk, parts[w], ck);
      if (++job->done == job->chunks) {
        std::lock_guard<std::mutex> lock(job->mu);
        job->all_done.notify_all();
      }
    }
  };
  for (int64_t w = 1; w < workers; ++w) {
    // A task that starts late must not touch `parts`: it finds no chunk.
    pool.Schedule([job, work, w] { work(w); });
  }
  work(0);
  {
    std::unique_lock<std::mutex> lock(job->mu);
    job->all_done.wait(lock, [&] { return job->done == job->chunks; });
  }
  for (int64_t i = 0; i < rows; ++i) FillMasked(rtop + i * rk, rpos + i * rk, rk, n);
  float* ctop = col_top->typed_data();
  int32_t* cpos = col_pos->typed_data();
  for (int64_t j = 0; j < cols; ++j) {
    MergeColumn(parts, j, ck, ctop + j * ck, cpos + j * ck);
    FillMasked(ctop + j * ck, cpos + j * ck, ck, q);
  }
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(BothTopK, BothTopKImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::Buffer<ffi::F32>>()  // tile
                                  .Arg<ffi::Buffer<ffi::S32>>()  // n_ok
                                  .Arg<ffi::Buffer<ffi::S32>>()  // q_ok
                                  .Arg<ffi::Buffer<ffi::F32>>()  // floor
                                  .Ret<ffi::Buffer<ffi::F32>>()  // row top
                                  .Ret<ffi::Buffer<ffi::S32>>()  // positions
                                  .Ret<ffi::Buffer<ffi::F32>>()  // column top
                                  .Ret<ffi::Buffer<ffi::S32>>()  // positions
                                  .Attr<int64_t>("workers"));
