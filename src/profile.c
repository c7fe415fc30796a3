/* profile.c: the in-process sampling profiler behind `opperf run --profile`. Samples arrive from
 * the sampler (pmu/sampler.c) only while a measured sample runs; they are kept as distinct call
 * chains with counts, and at the end of each case resolved to functions: /proc/self/maps gives
 * the file and offset of an address, its PT_LOAD segments the link-time address, and its
 * symbol table (src/elfinfo.c) the function. The result: the hottest functions by self and
 * total share, the samples lost and unresolved, and optionally folded stacks. */
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opperf/elfinfo.h"
#include "opperf/profile.h"

/* ---- distinct call chains and their counts (open addressing on a hash of the chain) ---- */
typedef struct stack_ent {
  uint64_t hash;
  size_t off; /* into the address pool */
  int n;
  int64_t count;
} stack_ent;

typedef struct stack_tab {
  stack_ent *v; /* cap slots, n used (count 0: empty) */
  size_t n, cap;
  uint64_t *pool;
  size_t pool_n, pool_cap;
  int64_t samples;
} stack_tab;

static uint64_t chain_hash(const uint64_t *a, int n) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t)n;
  for (int i = 0; i < n; i++) h = (h ^ a[i]) * 1099511628211ull + (h >> 29);
  return h ? h : 1;
}

static int tab_grow(stack_tab *t) {
  size_t cap = t->cap ? 2 * t->cap : 1024;
  stack_ent *v = calloc(cap, sizeof *v);
  if (!v) return -1;
  for (size_t i = 0; i < t->cap; i++) {
    if (!t->v[i].count) continue;
    size_t j = t->v[i].hash & (cap - 1);
    while (v[j].count) j = (j + 1) & (cap - 1);
    v[j] = t->v[i];
  }
  free(t->v);
  t->v = v;
  t->cap = cap;
  return 0;
}

/* Count one chain; a chain that cannot be stored (out of memory) is counted as lost. */
static int tab_add(stack_tab *t, const uint64_t *a, int n) {
  if ((t->n + 1) * 2 > t->cap && tab_grow(t)) return -1;
  uint64_t h = chain_hash(a, n);
  size_t j = h & (t->cap - 1);
  for (; t->v[j].count; j = (j + 1) & (t->cap - 1)) {
    stack_ent *e = &t->v[j];
    if (e->hash == h && e->n == n && !memcmp(t->pool + e->off, a, sizeof *a * (size_t)n)) {
      e->count++;
      t->samples++;
      return 0;
    }
  }
  if (t->pool_n + (size_t)n > t->pool_cap) {
    size_t cap = t->pool_cap ? 2 * t->pool_cap : 65536;
    while (cap < t->pool_n + (size_t)n) cap *= 2;
    uint64_t *p = realloc(t->pool, sizeof *p * cap);
    if (!p) return -1;
    t->pool = p;
    t->pool_cap = cap;
  }
  memcpy(t->pool + t->pool_n, a, sizeof *a * (size_t)n);
  t->v[j] = (stack_ent){h, t->pool_n, n, 1};
  t->pool_n += (size_t)n;
  t->n++;
  t->samples++;
  return 0;
}

static void tab_clear(stack_tab *t) {
  if (t->v) memset(t->v, 0, sizeof *t->v * t->cap);
  t->n = t->pool_n = 0;
  t->samples = 0;
}

/* ---- executable mappings of this process and their ELF symbol tables ---- */
typedef struct module {
  char path[512];
  char name[48];     /* "libopenblas", the executable's file name, "[vdso]" */
  int is_main, is_file;
  int tried;         /* symbol table load attempted (once per run) */
  int loaded, has_dbg;
  opf_elf_symtab syms;
  opf_elf_symtab dbg; /* full symbol table of the separate debug file, when installed */
} module;

typedef struct mapping {
  uint64_t start, end, pgoff;
  int mod; /* index into modules, -1: anonymous */
} mapping;

/* A resolved frame: function name and module, interned (several addresses share one). */
typedef struct frame {
  char name[112];
  int mod; /* -1: none */
  int resolved;
  int64_t self, total, stamp;
} frame;

struct opf_profile {
  opf_profile_opts o;
  char event[16];
  opf_sampler *smp;
  stack_tab tab;
  int64_t dropped;             /* chains not stored (out of memory): counted as lost */
  uint64_t lost0, throttled0;  /* sampler totals when the case began */
  module *mods;
  int n_mods;
  mapping *maps;
  int n_maps;
  frame *frames;
  int n_frames, cap_frames;
  /* the finished case, waiting for opf_profile_attach */
  int ready;
  opf_profile_summary sum;
  char *folded;
  size_t folded_len;
};

/* "libopenblas.so.0" -> "libopenblas"; "opperf" stays. */
static void module_name(const char *path, char *out, size_t n) {
  const char *b = strrchr(path, '/');
  b = b ? b + 1 : path;
  const char *so = strstr(b, ".so");
  int len = so && so > b ? (int)(so - b) : (int)strlen(b);
  snprintf(out, n, "%.*s", len, b);
}

static int find_module(opf_profile *p, const char *path) {
  for (int i = 0; i < p->n_mods; i++)
    if (!strcmp(p->mods[i].path, path)) return i;
  module *m = realloc(p->mods, sizeof *m * (size_t)(p->n_mods + 1));
  if (!m) return -1;
  p->mods = m;
  m = &p->mods[p->n_mods];
  memset(m, 0, sizeof *m);
  snprintf(m->path, sizeof m->path, "%s", path);
  m->is_file = path[0] == '/';
  if (m->is_file) module_name(path, m->name, sizeof m->name);
  else snprintf(m->name, sizeof m->name, "%s", path);
  return p->n_mods++;
}

static const mapping *find_mapping(const opf_profile *p, uint64_t a) {
  int lo = 0, hi = p->n_maps;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (a < p->maps[mid].start) hi = mid;
    else if (a >= p->maps[mid].end) lo = mid + 1;
    else return &p->maps[mid];
  }
  return NULL;
}

/* dl_iterate_phdr names a library as it was loaded ("/usr/lib/.../libopenblas.so.0"), where
 * /proc/self/maps shows the file behind the symlinks ("libopenblasp-r0.3.21.so"): the loaded
 * name is the one users know. The object whose dlpi_name is empty is the executable. */
static int name_from_loader(struct dl_phdr_info *info, size_t size, void *ctx) {
  (void)size;
  opf_profile *p = ctx;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    const mapping *m = find_mapping(p, info->dlpi_addr + ph->p_vaddr);
    if (!m || m->mod < 0) continue;
    module *mod = &p->mods[m->mod];
    if (!info->dlpi_name || !info->dlpi_name[0]) mod->is_main = 1;
    else if (info->dlpi_name[0] == '/') module_name(info->dlpi_name, mod->name, sizeof mod->name);
  }
  return 0;
}

/* Re-read the executable mappings (libraries may have been loaded since the last case). */
static int load_maps(opf_profile *p, opf_err *err) {
  FILE *f = fopen("/proc/self/maps", "re");
  if (!f) return opf_err_set(err, OPF_EIO, "cannot read /proc/self/maps");
  p->n_maps = 0;
  int cap = 0, rc = OPF_OK;
  char line[1024];
  while (fgets(line, sizeof line, f)) {
    unsigned long long s, e, off;
    char perms[8];
    int pos = 0;
    if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &s, &e, perms, &off, &pos) < 4 || !strchr(perms, 'x'))
      continue;
    char *path = line + pos;
    path[strcspn(path, "\n")] = '\0';
    if (p->n_maps == cap) {
      cap = cap ? 2 * cap : 64;
      mapping *m = realloc(p->maps, sizeof *m * (size_t)cap);
      if (!m) {
        rc = opf_err_set(err, OPF_ENOMEM, "out of memory");
        break;
      }
      p->maps = m;
    }
    mapping *m = &p->maps[p->n_maps++];
    *m = (mapping){s, e, off, path[0] ? find_module(p, path) : -1};
  }
  fclose(f);
  if (!rc) dl_iterate_phdr(name_from_loader, p);
  return rc;
}

static int intern_frame(opf_profile *p, const char *name, int mod, int resolved) {
  for (int i = 0; i < p->n_frames; i++)
    if (p->frames[i].mod == mod && !strcmp(p->frames[i].name, name)) return i;
  if (p->n_frames == p->cap_frames) {
    int cap = p->cap_frames ? 2 * p->cap_frames : 256;
    frame *f = realloc(p->frames, sizeof *f * (size_t)cap);
    if (!f) return -1;
    p->frames = f;
    p->cap_frames = cap;
  }
  frame *f = &p->frames[p->n_frames];
  memset(f, 0, sizeof *f);
  snprintf(f->name, sizeof f->name, "%s", name);
  f->mod = mod;
  f->resolved = resolved;
  f->stamp = -1;
  return p->n_frames++;
}

/* A library with only .dynsym lacks its internal functions (libc's memcpy implementations,
 * libgomp's barriers); its separate debug file (Debian's -dbg / -dbgsym packages, found by
 * build-id as gdb and perf do) has the full .symtab at the same link-time addresses. */
static void load_symbols(module *mod) {
  opf_err e;
  mod->tried = 1;
  mod->loaded = opf_elf_symtab_load(mod->path, &mod->syms, &e) == OPF_OK;
  char id[OPF_BUILD_ID_MAX], dbg[300];
  if (!mod->loaded || mod->syms.from_symtab || opf_elf_build_id(mod->path, id, sizeof id, &e) || strlen(id) < 3)
    return;
  snprintf(dbg, sizeof dbg, "/usr/lib/debug/.build-id/%.2s/%s.debug", id, id + 2);
  mod->has_dbg = opf_elf_symtab_load(dbg, &mod->dbg, &e) == OPF_OK && mod->dbg.from_symtab;
  if (!mod->has_dbg && mod->dbg.syms) opf_elf_symtab_free(&mod->dbg);
}

/* The frame of an address: its function, "[MODULE internal]" when no symbol of the file covers
 * it (a library's internal functions are absent from its .dynsym), "[unknown]" outside files. */
static int resolve(opf_profile *p, uint64_t a) {
  const mapping *m = find_mapping(p, a);
  if (!m || m->mod < 0) return intern_frame(p, "[unknown]", -1, 0);
  module *mod = &p->mods[m->mod];
  if (!mod->is_file) return intern_frame(p, mod->name, m->mod, 0); /* [vdso] and the like */
  if (!mod->tried) load_symbols(mod);
  uint64_t va;
  const opf_elf_sym *s = NULL;
  if (mod->loaded && opf_elf_offset_to_vaddr(&mod->syms, a - m->start + m->pgoff, &va))
    s = opf_elf_symtab_find(mod->has_dbg ? &mod->dbg : &mod->syms, va);
  /* An unsized symbol would swallow whatever follows it up to the next symbol: _init covers
   * the .plt stubs after it (calls to memcpy would read "_init"), and in a .dynsym-only library
   * the internal functions after an export. Only sized symbols name an address. */
  if (s && !s->size) s = NULL;
  if (s) return intern_frame(p, s->name, m->mod, 1);
  char g[112];
  snprintf(g, sizeof g, "[%s internal]", mod->name);
  return intern_frame(p, g, m->mod, 0);
}

/* ---- address -> frame cache for one case ---- */
typedef struct addr_map {
  uint64_t *key; /* 0: empty (no sampled address is 0) */
  int *val;
  size_t cap;
} addr_map;

static int frame_of(opf_profile *p, addr_map *am, uint64_t a) {
  if (!a) return intern_frame(p, "[unknown]", -1, 0);
  size_t j = (a * 0x9e3779b97f4a7c15ull >> 17) & (am->cap - 1);
  for (; am->key[j]; j = (j + 1) & (am->cap - 1))
    if (am->key[j] == a) return am->val[j];
  int f = resolve(p, a);
  am->key[j] = a;
  am->val[j] = f;
  return f;
}

/* ---- the hooks ---- */
static void count_sample(void *ctx, const uint64_t *ips, int n) {
  opf_profile *p = ctx;
  if (tab_add(&p->tab, ips, n)) p->dropped++;
}

static void hook_begin(void *ctx) {
  opf_profile *p = ctx;
  opf_sampler_enable(p->smp);
}

static void hook_end(void *ctx) {
  opf_profile *p = ctx;
  opf_sampler_disable(p->smp);
  opf_sampler_drain(p->smp, 1, count_sample, p);
}

/* A frame as a folded-stack element: no ';' (the separator) and no white space. */
static int fold_name(char *out, size_t n, const char *s) {
  size_t k = 0;
  for (; *s && k + 1 < n; s++) out[k++] = (*s == ';' || *s == ' ' || *s == '\t' || *s == '\n') ? '_' : *s;
  out[k] = '\0';
  return (int)k;
}

/* The root frames of a case's stacks: "OP;PASS;DTYPE,INPUT=SHAPE,...[,PARAM=VALUE,...]". */
static void fold_prefix(const opf_result *r, char *out, size_t n) {
  char c[512], op[96], fc[512], fop[96];
  int k = snprintf(c, sizeof c, "%s", opf_dtype_name(r->dtype));
  for (int i = 0; i < r->n_tensors && k < (int)sizeof c; i++)
    if (!strcmp(r->tensors[i].role, "in"))
      k += snprintf(c + k, sizeof c - (size_t)k, ",%s=%s", r->tensors[i].name, r->tensors[i].shape);
  for (const char *q = r->params; *q && k + 2 < (int)sizeof c; q++) /* "a=1 b=2" -> ",a=1,b=2" */
    k += snprintf(c + k, sizeof c - (size_t)k, "%s%c", q == r->params ? "," : "", *q == ' ' ? ',' : *q);
  int native = !strcmp(r->impl, "native");
  snprintf(op, sizeof op, "%s%s%s", r->op, native ? "" : ":", native ? "" : r->impl);
  fold_name(fop, sizeof fop, op);
  fold_name(fc, sizeof fc, c);
  snprintf(out, n, "%s;%s;%s", fop, opf_pass_name(r->pass), fc);
}

typedef struct strbuf {
  char *s;
  size_t n, cap;
  int oom;
} strbuf;

static void sb_add(strbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 65536;
    while (cap < b->n + n + 1) cap *= 2;
    char *x = realloc(b->s, cap);
    if (!x) {
      b->oom = 1;
      return;
    }
    b->s = x;
    b->cap = cap;
  }
  memcpy(b->s + b->n, s, n);
  b->n += n;
  b->s[b->n] = '\0';
}

static void fold_stack(opf_profile *p, strbuf *b, const char *prefix, const int *fr, int n, int64_t count) {
  sb_add(b, prefix, strlen(prefix));
  char nm[160];
  for (int i = n - 1; i >= 0; i--) { /* root first */
    const frame *f = &p->frames[fr[i]];
    sb_add(b, ";", 1);
    sb_add(b, nm, (size_t)fold_name(nm, sizeof nm, f->name));
  }
  int k = snprintf(nm, sizeof nm, " %lld\n", (long long)count);
  sb_add(b, nm, (size_t)k);
}

/* Resolve the case's chains and fill p->sum (and p->folded). */
static int finish_case(opf_profile *p, const opf_result *r, opf_err *err) {
  int rc = load_maps(p, err);
  if (rc) return rc;
  for (int i = 0; i < p->n_frames; i++) p->frames[i].self = p->frames[i].total = 0, p->frames[i].stamp = -1;
  addr_map am = {0};
  am.cap = 1024;
  while (am.cap < 2 * p->tab.pool_n) am.cap *= 2;
  am.key = calloc(am.cap, sizeof *am.key);
  am.val = malloc(sizeof *am.val * am.cap);
  int fr[256];
  strbuf fb = {0};
  char prefix[640];
  if (p->o.folded) fold_prefix(r, prefix, sizeof prefix);
  int64_t unresolved = 0;
  for (size_t i = 0; am.key && am.val && i < p->tab.cap; i++) {
    const stack_ent *e = &p->tab.v[i];
    if (!e->count) continue;
    const uint64_t *a = p->tab.pool + e->off;
    int n = e->n < 256 ? e->n : 256, ok = 1;
    /* Callers' addresses are return addresses: the call is the instruction before. */
    for (int k = 0; k < n && ok; k++) {
      ok = (fr[k] = frame_of(p, &am, k ? a[k] - 1 : a[k])) >= 0;
      /* A caller outside every executable mapping: the frame-pointer walk went astray in code
       * built without frame pointers (Debian's libgomp, libc, OpenBLAS kernels). Cut there. */
      if (ok && k && p->frames[fr[k]].mod < 0) n = k;
    }
    if (!ok) continue;
    frame *leaf = &p->frames[fr[0]];
    leaf->self += e->count;
    if (!leaf->resolved) unresolved += e->count;
    for (int k = 0; k < n; k++) { /* total: once per stack, however often it recurses */
      frame *f = &p->frames[fr[k]];
      if (f->stamp != (int64_t)i) f->total += e->count, f->stamp = (int64_t)i;
    }
    if (p->o.folded) fold_stack(p, &fb, prefix, fr, n, e->count);
  }
  int oom = !am.key || !am.val || fb.oom;
  free(am.key);
  free(am.val);
  if (oom) {
    free(fb.s);
    return opf_err_set(err, OPF_ENOMEM, "out of memory resolving the profile");
  }
  opf_profile_summary *s = &p->sum;
  memset(s, 0, sizeof *s);
  snprintf(s->event, sizeof s->event, "%s", p->event);
  s->hz = p->o.hz;
  s->threads = opf_sampler_threads(p->smp);
  uint64_t lost, thr;
  opf_sampler_counts(p->smp, &lost, &thr);
  s->samples = p->tab.samples;
  s->lost = (int64_t)(lost - p->lost0) + p->dropped;
  s->throttled = (int64_t)(thr - p->throttled0);
  s->unresolved = unresolved;
  /* Every frame with samples of its own, best first; keep the top. */
  opf_profile_func *all = calloc((size_t)p->n_frames + 1, sizeof *all);
  if (!all) {
    free(fb.s);
    return opf_err_set(err, OPF_ENOMEM, "out of memory");
  }
  int na = 0;
  double tot = s->samples > 0 ? (double)s->samples : 1;
  for (int i = 0; i < p->n_frames; i++) {
    const frame *f = &p->frames[i];
    if (!f->self) continue;
    opf_profile_func *o = &all[na++];
    snprintf(o->name, sizeof o->name, "%s", f->name);
    if (f->mod >= 0) {
      snprintf(o->module, sizeof o->module, "%s", p->mods[f->mod].name);
      o->in_lib = !p->mods[f->mod].is_main && p->mods[f->mod].is_file;
    }
    o->self = (double)f->self / tot;
    o->total = (double)f->total / tot;
    o->resolved = f->resolved;
  }
  qsort(all, (size_t)na, sizeof *all, opf_profile_func_cmp);
  s->n_funcs = na < p->o.top ? na : p->o.top;
  memcpy(s->funcs, all, sizeof *all * (size_t)s->n_funcs);
  free(all);
  free(p->folded);
  p->folded = NULL;
  p->folded_len = 0;
  if (p->o.folded && fb.s) { /* identical names from different addresses: one line each */
    rc = opf_folded_merge(&p->folded, &p->folded_len, fb.s, fb.n);
    free(fb.s);
    if (rc) return opf_err_set(err, rc, "cannot build the folded stacks");
  }
  p->ready = 1;
  return OPF_OK;
}

static void hook_case_end(void *ctx, const opf_result *r) {
  opf_profile *p = ctx;
  opf_sampler_disable(p->smp);
  opf_sampler_drain(p->smp, 0, count_sample, p);
  opf_err e;
  if (finish_case(p, r, &e)) p->ready = 0;
}

static void start_case(opf_profile *p) {
  tab_clear(&p->tab);
  p->dropped = 0;
  opf_sampler_counts(p->smp, &p->lost0, &p->throttled0);
  p->ready = 0;
}

opf_region_hooks opf_profile_hooks(opf_profile *p) {
  opf_region_hooks h = {hook_begin, hook_end, hook_case_end, p};
  return h;
}

int opf_profile_attach(opf_profile *p, opf_result *r, opf_err *err) {
  if (p->ready) {
    r->profile = p->sum;
    free(r->folded);
    r->folded = p->folded;
    r->folded_len = p->folded_len;
    p->folded = NULL;
    p->folded_len = 0;
  }
  /* Samples of a case that failed before its end are dropped with it. */
  opf_sampler_drain(p->smp, 0, count_sample, p);
  start_case(p);
  return opf_sampler_refresh(p->smp, err);
}

int opf_profile_open(opf_profile **out, const opf_profile_opts *o, opf_err *err) {
  *out = NULL;
  opf_profile_opts d = {0};
  if (o) d = *o;
  if (!d.event) d.event = "cpu-clock";
  if (!d.hz) d.hz = OPF_PROFILE_DEFAULT_HZ;
  if (!d.top) d.top = OPF_PROFILE_DEFAULT_TOP;
  if (d.top < 1 || d.top > OPF_PROFILE_MAX_FUNCS)
    return opf_err_set(err, OPF_EINVAL, "the profile keeps 1 to %d functions, not %d", OPF_PROFILE_MAX_FUNCS, d.top);
  opf_profile *p = calloc(1, sizeof *p);
  if (!p) return opf_err_set(err, OPF_ENOMEM, "out of memory");
  p->o = d;
  snprintf(p->event, sizeof p->event, "%s", d.event);
  p->o.event = p->event;
  int rc = opf_sampler_open(&p->smp, d.event, d.hz, err);
  if (rc) {
    free(p);
    return rc;
  }
  start_case(p);
  *out = p;
  return OPF_OK;
}

void opf_profile_close(opf_profile *p) {
  if (!p) return;
  opf_sampler_close(p->smp);
  for (int i = 0; i < p->n_mods; i++) {
    if (p->mods[i].loaded) opf_elf_symtab_free(&p->mods[i].syms);
    if (p->mods[i].has_dbg) opf_elf_symtab_free(&p->mods[i].dbg);
  }
  free(p->mods);
  free(p->maps);
  free(p->frames);
  free(p->tab.v);
  free(p->tab.pool);
  free(p->folded);
  free(p);
}
