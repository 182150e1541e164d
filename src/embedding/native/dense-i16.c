/*
 * The 16-bit dense product of the USE-lite forward pass, native (x86-64: AVX-512 VNNI, else AVX2),
 * loaded by native-matmul.ts through bun:ffi. The same arithmetic as the WebAssembly kernel of
 * simd-matmul-i16.ts, so every output is bit for bit the one that kernel gives:
 *   - weights packed by packPanelsI16 (panels of 8 columns; per pair of k, 16 i16
 *     [w[2k][c], w[2k+1][c]] for c = 0..7), activations quantised per row (i16, one scale a row);
 *   - products summed exactly in i32 over blocks of 32 k (32 · 8000² < 2³¹), each block's sum
 *     converted to f32 and added to the row's f32 total in block order;
 *   - then out = total · (colScale · rowScale) + bias, and max(·, 0) with relu.
 * Integer sums are exact in any order, and the f32 steps run in the same order with no fused
 * multiply-add (built with -ffp-contract=off), so the result does not depend on the instruction set.
 *
 * Register tile: up to 4 rows × 4 panels (32 columns; 2 panels with AVX2's 16 registers): per pair
 * of k, one load of weights a panel, one broadcast of each row's pair and a multiply-add of 16 i16
 * per row and panel (vpdpwssd, or vpmaddwd + vpaddd).
 * The sparse form reads only the pairs a pair list names (simd-matmul-i16.ts pairList: per tile of
 * 4 rows and block of 32 k, the count, then the byte offsets of the pairs non-zero in some row of
 * the tile); a pair left out is zero in every row and adds exactly 0.
 */
#include <stdint.h>
#include <stddef.h>
#include <immintrin.h>
#include <math.h>

/* Checked by native-matmul.ts: a library built from another version of this file is not used. */
#define SVC_DENSE_I16_ABI 3
#define KBLOCK 32
#define TR 4 /* rows per register tile (the pair list's tile) */
#define LIST_RECORD (1 + KBLOCK / 2)

#define UNROLL(n) _Pragma("GCC unroll 16")

/* One pair of k (index q): each panel's weights loaded once, each row's pair broadcast, R × TP multiply-adds. */
#define PAIR_STEP(q, DOT, R, TP)                                                                         \
  do {                                                                                                   \
    const int q_ = (q);                                                                                  \
    __m256i v[TP];                                                                                       \
    UNROLL() for (int p = 0; p < TP; p++) v[p] = _mm256_loadu_si256(wp[p] + q_);                          \
    UNROLL() for (int r = 0; r < R; r++) {                                                                \
      const __m256i s = _mm256_set1_epi32(xr[r][q_]);                                                    \
      UNROLL() for (int p = 0; p < TP; p++) a[r][p] = DOT(a[r][p], v[p], s);                              \
    }                                                                                                    \
  } while (0)

/* Rows i..i+R-1, panels p0..p0+P-1 (P ≤ TP; a missing panel repeats the last and is not stored). */
#define DEFINE_TILE(NAME, TARGET, DOT, R, TP)                                                                  \
  __attribute__((target(TARGET))) static void NAME(const int16_t *x, const float *rs, const int16_t *w,    \
      const float *cs, const float *bias, float *out, int i, int j, int P, int K, int ns, int relu,        \
      const int32_t *list) {                                                                             \
    const int pairs = K / 2;                                                                             \
    __m256 t[R][TP];                                                                                     \
    UNROLL() for (int r = 0; r < R; r++) UNROLL() for (int p = 0; p < TP; p++) t[r][p] = _mm256_setzero_ps(); \
    const int32_t *xr[R];                                                                                \
    UNROLL() for (int r = 0; r < R; r++) xr[r] = (const int32_t *)(x + (size_t)(i + r) * K);              \
    const __m256i *wp[TP];                                                                               \
    UNROLL() for (int p = 0; p < TP; p++) wp[p] = (const __m256i *)(w + (size_t)(j + 8 * (p < P ? p : P - 1)) * K); \
    const int32_t *rec = list ? list + (size_t)(i / TR) * (pairs / (KBLOCK / 2)) * LIST_RECORD : NULL;   \
    for (int kb = 0; kb < pairs; kb += KBLOCK / 2) {                                                      \
      __m256i a[R][TP];                                                                                  \
      UNROLL() for (int r = 0; r < R; r++) UNROLL() for (int p = 0; p < TP; p++) a[r][p] = _mm256_setzero_si256(); \
      if (rec) {                                                                                         \
        const int n = rec[0];                                                                            \
        for (int e = 0; e < n; e++) {                                                                    \
          PAIR_STEP(kb + (rec[1 + e] >> 2), DOT, R, TP);                                                 \
        }                                                                                                \
        rec += LIST_RECORD;                                                                              \
      } else {                                                                                           \
        UNROLL() for (int q = kb; q < kb + KBLOCK / 2; q++) PAIR_STEP(q, DOT, R, TP);                     \
      }                                                                                                  \
      UNROLL() for (int r = 0; r < R; r++) UNROLL() for (int p = 0; p < TP; p++)                          \
        t[r][p] = _mm256_add_ps(t[r][p], _mm256_cvtepi32_ps(a[r][p]));                                   \
    }                                                                                                    \
    const __m256 zero = _mm256_setzero_ps();                                                             \
    UNROLL() for (int r = 0; r < R; r++) {                                                                \
      const __m256 s = _mm256_set1_ps(rs[i + r]);                                                        \
      for (int p = 0; p < P; p++) {                                                                      \
        const int c = j + 8 * p;                                                                         \
        const __m256 sc = _mm256_mul_ps(_mm256_loadu_ps(cs + c), s);                                     \
        __m256 y = _mm256_add_ps(_mm256_mul_ps(t[r][p], sc), _mm256_loadu_ps(bias + c));                 \
        if (relu) y = _mm256_max_ps(y, zero);                                                            \
        _mm256_storeu_ps(out + (size_t)(i + r) * ns + c, y);                                             \
      }                                                                                                  \
    }                                                                                                    \
  }

#define DEFINE_KERNEL(NAME, TARGET, DOT, TP)                                                                   \
  DEFINE_TILE(NAME##_r4, TARGET, DOT, 4, TP)                                                                 \
  DEFINE_TILE(NAME##_r3, TARGET, DOT, 3, TP)                                                                 \
  DEFINE_TILE(NAME##_r2, TARGET, DOT, 2, TP)                                                                 \
  DEFINE_TILE(NAME##_r1, TARGET, DOT, 1, TP)                                                                 \
  __attribute__((target(TARGET))) static void NAME(const int16_t *x, const float *rs, const int16_t *w,    \
      const float *cs, const float *bias, float *out, int M, int K, int N, int ns, int relu,              \
      const int32_t *list) {                                                                             \
    for (int j = 0; j < N; j += 8 * TP) {                                                                \
      const int P = (N - j) / 8 < TP ? (N - j) / 8 : TP;                                                 \
      int i = 0;                                                                                         \
      for (; i + TR <= M; i += TR) NAME##_r4(x, rs, w, cs, bias, out, i, j, P, K, ns, relu, list);       \
      switch (M - i) {                                                                                   \
        case 3: NAME##_r3(x, rs, w, cs, bias, out, i, j, P, K, ns, relu, list); break;                   \
        case 2: NAME##_r2(x, rs, w, cs, bias, out, i, j, P, K, ns, relu, list); break;                   \
        case 1: NAME##_r1(x, rs, w, cs, bias, out, i, j, P, K, ns, relu, list); break;                   \
      }                                                                                                  \
    }                                                                                                    \
  }

#define DOT_AVX2(acc, w, x) _mm256_add_epi32(acc, _mm256_madd_epi16(w, x))
#define DOT_VNNI(acc, w, x) _mm256_dpwssd_epi32(acc, w, x)

DEFINE_KERNEL(dense_avx2, "avx2", DOT_AVX2, 2) /* 16 vector registers: 4 × 2 tile */
DEFINE_KERNEL(dense_vnni, "avx2,avx512f,avx512vl,avx512vnni", DOT_VNNI, 4) /* 32 registers: 4 × 4 */

/*
 * Quantisation of M rows of K floats (K a multiple of 16), as simd-matmul-i16.ts's quant kernel:
 * m = max |x| of the row (1 → scale 1 for an all-zero row: m = Q16), rowScale = m / Q16,
 * q = round-half-to-even(x · (Q16 / m)) as i16, all in f32.
 */
#define Q16 8000.0f
#define DEFINE_QUANT(NAME, TARGET)                                                                       \
  __attribute__((target(TARGET))) static void NAME(const float *x, int16_t *q, float *rs, int M, int K) { \
    for (int i = 0; i < M; i++, x += K, q += K) {                                                        \
      const __m256 sign = _mm256_set1_ps(-0.0f);                                                         \
      __m256 mx = _mm256_setzero_ps();                                                                   \
      for (int k = 0; k < K; k += 8) mx = _mm256_max_ps(mx, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + k))); \
      float l[8];                                                                                        \
      _mm256_storeu_ps(l, mx);                                                                           \
      float m = 0.0f;                                                                                    \
      for (int c = 0; c < 8; c++) m = l[c] > m ? l[c] : m;                                               \
      m = m > 0.0f ? m : Q16;                                                                            \
      rs[i] = m / Q16;                                                                                   \
      const __m256 sv = _mm256_set1_ps(Q16 / m);                                                         \
      for (int k = 0; k < K; k += 16) {                                                                  \
        const __m256i a = _mm256_cvttps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + k), sv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)); \
        const __m256i b = _mm256_cvttps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + k + 8), sv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)); \
        /* packs works per 128-bit lane: a0 b0 a1 b1 → a0 a1 b0 b1 */                                   \
        _mm256_storeu_si256((__m256i *)(q + k), _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xd8)); \
      }                                                                                                  \
    }                                                                                                    \
  }
DEFINE_QUANT(quant_avx2, "avx2")

void svc_quant_i16(const float *x, int16_t *q, float *rs, int M, int K) { quant_avx2(x, q, rs, M, K); }

/*
 * Layer norm of `rows` rows of d floats, as use-lite-fast.ts computes it in JS: mean and variance
 * summed in double in index order, inv = 1 / sqrt(var / d + 1e-6), y = f32((x - mean) · inv · g + b)
 * in double. Same operations in the same order, so the same bits.
 */
void svc_layer_norm(const float *x, float *y, int rows, int d, const float *g, const float *b) {
  for (int r = 0; r < rows; r++, x += d, y += d) {
    double mean = 0;
    for (int c = 0; c < d; c++) mean += x[c];
    mean /= d;
    double v = 0;
    for (int c = 0; c < d; c++) {
      const double z = x[c] - mean;
      v += z * z;
    }
    const double inv = 1 / sqrt(v / d + 1e-6);
    for (int c = 0; c < d; c++) y[c] = (float)((x[c] - mean) * inv * g[c] + b[c]);
  }
}

/*
 * Self-attention of one text's T rows (use-lite-fast.ts attention, the same arithmetic): per head of
 * hd = d / heads channels, scores[i][j] = Σ_c k[j][c] · (f32(q[i][c] · qScale)) in f32, summed in c order
 * from 0; softmax in double with exp (the C library's, which Math.exp is), e rounded to f32, the sum
 * of the unrounded e; p = f32(f32(e) · (1 / sum)); context[t][c] = Σ_j v[j][c] · p[t][j] in f32, in j order.
 * qkv: T rows of 3d floats (q, k, v); ctx: T rows of d floats (hd a multiple of 64); scratch:
 * T·hd + hd·Tp + T·Tp floats, Tp = T rounded up to 32. Columns are summed 8 at a time in vector lanes,
 * several independent sums in flight (each lane's sum in the same order as alone).
 */
__attribute__((target("avx2"))) static void attention_avx2(const float *qkv, float *ctx, int T, int d, int heads, double qScale, float *scratch) {
  /* keys padded to a multiple of 32 columns (zero keys: their scores are computed and never read), so
     the score loop keeps 2 rows × 4 column blocks of independent sums in flight */
  const int hd = d / heads, w3 = 3 * d, Tp = (T + 31) & ~31;
  float *Q = scratch, *KT = Q + (size_t)T * hd, *S = KT + (size_t)hd * Tp;
  for (int h = 0; h < heads; h++) {
    const int qo = h * hd, ko = d + h * hd, vo = 2 * d + h * hd;
    for (int t = 0; t < T; t++)
      for (int c = 0; c < hd; c++) Q[t * hd + c] = (float)((double)qkv[(size_t)t * w3 + qo + c] * qScale);
    for (int c = 0; c < hd; c++) {
      for (int t = 0; t < T; t++) KT[c * Tp + t] = qkv[(size_t)t * w3 + ko + c];
      for (int t = T; t < Tp; t++) KT[c * Tp + t] = 0.0f;
    }
    for (int i = 0; i < T; i += 2) {
      const int i1 = i + 1 < T ? i + 1 : i; /* an odd last row is computed twice, stored once */
      for (int j = 0; j < Tp; j += 32) {
        __m256 a0[4], a1[4];
        for (int b = 0; b < 4; b++) a0[b] = a1[b] = _mm256_setzero_ps();
        for (int c = 0; c < hd; c++) {
          const __m256 q0 = _mm256_set1_ps(Q[i * hd + c]), q1 = _mm256_set1_ps(Q[i1 * hd + c]);
          for (int b = 0; b < 4; b++) {
            const __m256 k = _mm256_loadu_ps(KT + c * Tp + j + 8 * b);
            a0[b] = _mm256_add_ps(a0[b], _mm256_mul_ps(k, q0));
            a1[b] = _mm256_add_ps(a1[b], _mm256_mul_ps(k, q1));
          }
        }
        for (int b = 0; b < 4; b++) {
          _mm256_storeu_ps(S + i * Tp + j + 8 * b, a0[b]);
          _mm256_storeu_ps(S + i1 * Tp + j + 8 * b, a1[b]);
        }
      }
    }
    for (int i = 0; i < T; i++) {
      float *row = S + i * Tp;
      double max = -INFINITY;
      for (int j = 0; j < T; j++)
        if (row[j] > max) max = row[j];
      double sum = 0;
      for (int j = 0; j < T; j++) {
        const double e = exp(row[j] - max);
        row[j] = (float)e;
        sum += e;
      }
      const double inv = 1 / sum;
      for (int j = 0; j < T; j++) row[j] = (float)(row[j] * inv);
    }
    /* context: 8 column blocks of independent sums per row (hd is 64 or 128) */
    for (int t = 0; t < T; t++) {
      const float *pr = S + t * Tp;
      for (int c0 = 0; c0 < hd; c0 += 64) {
        __m256 acc[8];
        for (int b = 0; b < 8; b++) acc[b] = _mm256_setzero_ps();
        for (int j = 0; j < T; j++) {
          const __m256 pj = _mm256_set1_ps(pr[j]);
          const float *v = qkv + (size_t)j * w3 + vo + c0;
          for (int b = 0; b < 8; b++) acc[b] = _mm256_add_ps(acc[b], _mm256_mul_ps(_mm256_loadu_ps(v + 8 * b), pj));
        }
        for (int b = 0; b < 8; b++) _mm256_storeu_ps(ctx + (size_t)t * d + qo + c0 + 8 * b, acc[b]);
      }
    }
  }
}

void svc_attention(const float *qkv, float *ctx, int T, int d, int heads, double qScale, float *scratch) {
  attention_avx2(qkv, ctx, T, d, heads, qScale, scratch);
}

int svc_dense_i16_abi(void) { return SVC_DENSE_I16_ABI; }

/* 2 = AVX-512 VNNI, 1 = AVX2, 0 = neither (the caller keeps the WebAssembly kernel). */
int svc_dense_i16_level(void) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx2")) return 2;
  if (__builtin_cpu_supports("avx2")) return 1;
  return 0;
}

/* x: M rows of K i16 (K a multiple of 32); N columns (a multiple of 8); list: NULL, or the pair
   list of these M rows (sparse form); level: 2 or 1 as svc_dense_i16_level() answered (or lower). */
void svc_dense_i16(const int16_t *x, const float *rs, const int16_t *w, const float *cs, const float *bias,
                   float *out, int M, int K, int N, int ns, int relu, const int32_t *list, int level) {
  if (level >= 2) dense_vnni(x, rs, w, cs, bias, out, M, K, N, ns, relu, list);
  else dense_avx2(x, rs, w, cs, bias, out, M, K, N, ns, relu, list);
}
