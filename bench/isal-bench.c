/* ISA-L reference for `npm run bench:coder -- --native`: encode and reconstruct GB/s of data
 * with gf_gen_cauchy1_matrix + ec_encode_data, the same code our coder matches byte for byte.
 * Two rows per case: "isa-l" (ec_encode_data, dispatched to the widest kernel the CPU has) and
 * "isa-l-avx128" (ec_encode_data_avx: VEX-encoded 128-bit pshufb nibble tables, the vector width
 * and method wasm SIMD has, and the encoding V8 emits for it), so one ratio says how far we are
 * from the machine and the other how good our code is at equal width. (ec_encode_data_sse is not
 * used: its legacy-encoded SSE ran at a fifth of the AVX one on the benchmark machine.)
 * Usage: isal-bench RUNS TARGET_SECONDS k m shardBytes [k m shardBytes ...]
 * Prints one JSON line per measurement. Built by bench/isal.ts with Debian's libisal-dev. */
#include <isa-l/erasure_code.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef void (*encoder)(int, int, int, unsigned char *, unsigned char **, unsigned char **);
typedef struct { int rows, k, len; unsigned char *tables; unsigned char **in, **out; encoder fn; } job;

static void run(job *j) { j->fn(j->len, j->k, j->rows, j->tables, j->in, j->out); }

static const char *names[] = {"isa-l", "isa-l-avx128"};
static const encoder fns[] = {ec_encode_data, ec_encode_data_avx};

static double measure(job *j, double bytes, int runs, double target) {
  for (int i = 0; i < 3; i++) run(j);
  long iters = 1;
  for (;;) {
    double t = now();
    for (long i = 0; i < iters; i++) run(j);
    if (now() - t > target / 4) break;
    iters *= 2;
  }
  double r[64];
  for (int x = 0; x < runs; x++) {
    double t = now();
    for (long i = 0; i < iters; i++) run(j);
    r[x] = bytes * iters / (now() - t) / 1e9;
  }
  qsort(r, runs, sizeof r[0], cmp);
  return r[runs / 2];
}

int main(int argc, char **argv) {
  int runs = atoi(argv[1]);
  double target = atof(argv[2]);
  for (int a = 3; a + 2 < argc; a += 3) {
    int k = atoi(argv[a]), m = atoi(argv[a + 1]), len = atoi(argv[a + 2]), n = k + m;
    unsigned char *gen = malloc(n * k), *tables = malloc(32 * k * m);
    unsigned char *shards[256], *in[256], *out[256];
    for (int i = 0; i < n; i++) {
      shards[i] = aligned_alloc(64, len);
      for (int b = 0; b < len; b++) shards[i][b] = (unsigned char)(rand() >> 7);
    }
    gf_gen_cauchy1_matrix(gen, n, k);
    ec_init_tables(k, m, gen + k * k, tables);
    for (int f = 0; f < 2; f++) {
    job enc = {m, k, len, tables, shards, shards + k, fns[f]};
    printf("{\"kernel\":\"%s\",\"op\":\"encode\",\"k\":%d,\"m\":%d,\"shardBytes\":%d,\"gbps\":%.3f}\n", names[f], k, m, len,
           measure(&enc, (double)k * len, runs, target));
    run(&enc);
    for (int lost = 1; lost <= m; lost += (m > 1 ? m - 1 : 1)) {
      /* Lose data shards 0..lost-1; read the first k survivors, as our coder does. */
      unsigned char sub[256 * 256], inv[256 * 256], dec[256 * 256], dtables[32 * 256 * 256];
      int src = 0;
      for (int i = lost; src < k; i++) {
        memcpy(sub + src * k, gen + i * k, k);
        in[src++] = shards[i];
      }
      if (gf_invert_matrix(sub, inv, k) != 0) return 1;
      for (int t = 0; t < lost; t++) {
        memcpy(dec + t * k, inv + t * k, k);
        out[t] = aligned_alloc(64, len);
      }
      ec_init_tables(k, lost, dec, dtables);
      job rec = {lost, k, len, dtables, in, out, fns[f]};
      printf("{\"kernel\":\"%s\",\"op\":\"reconstruct-%d\",\"k\":%d,\"m\":%d,\"shardBytes\":%d,\"gbps\":%.3f}\n", names[f], lost, k, m,
             len, measure(&rec, (double)k * len, runs, target));
      run(&rec);
      for (int t = 0; t < lost; t++) {
        if (memcmp(out[t], shards[t], len) != 0) { fprintf(stderr, "isa-l reconstruct mismatch\n"); return 1; }
        free(out[t]);
      }
    }
    }
    for (int i = 0; i < n; i++) free(shards[i]);
    free(gen);
    free(tables);
  }
  return 0;
}
