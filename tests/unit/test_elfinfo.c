/* test_elfinfo.c: src/elfinfo.c against a library with known symbols (tests/fixtures/elf):
 * each known function's run-time address, turned into a link-time address both through the
 * load bias and through /proc/self/maps + PT_LOAD segments, resolves to its name; the dynsym
 * prefix scan; build-ids equal `readelf -n`; a stripped copy falls back to .dynsym. */
#include <dlfcn.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "opperf/elfinfo.h"

#ifndef OPF_KNOWN_SYMS_LIB
#error "OPF_KNOWN_SYMS_LIB: path of the fixture library (set by tests/CMakeLists.txt)"
#endif

typedef double (*known_fn)(const double *, size_t);

typedef struct fixture {
  void *dl;
  uintptr_t bias; /* load bias: run-time address = bias + link-time address */
  opf_elf_symtab t;
} fixture;

static void *sym(fixture *f, const char *name) {
  void *p = dlsym(f->dl, name);
  assert_non_null(p);
  return p;
}

static int setup_lib(void **state, const char *path) {
  fixture *f = calloc(1, sizeof *f);
  if (!f)
    return -1;
  f->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!f->dl) {
    fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
    free(f);
    return -1;
  }
  struct link_map *lm = NULL;
  if (dlinfo(f->dl, RTLD_DI_LINKMAP, &lm) != 0)
    return -1;
  f->bias = (uintptr_t)lm->l_addr;
  opf_err err = {0};
  if (opf_elf_symtab_load(path, &f->t, &err) != OPF_OK) {
    fprintf(stderr, "%s\n", err.msg);
    return -1;
  }
  *state = f;
  return 0;
}

static int setup_full(void **state) { return setup_lib(state, OPF_KNOWN_SYMS_LIB); }
static int setup_stripped(void **state) { return setup_lib(state, OPF_KNOWN_SYMS_STRIPPED); }

static int teardown(void **state) {
  fixture *f = *state;
  opf_elf_symtab_free(&f->t);
  dlclose(f->dl);
  free(f);
  return 0;
}

/* The file offset of a run-time address, from the /proc/self/maps line that maps it. */
static int maps_offset(uintptr_t addr, uint64_t *offset) {
  FILE *m = fopen("/proc/self/maps", "r");
  if (!m)
    return -1;
  char line[1024];
  int found = -1;
  while (found && fgets(line, sizeof line, m)) {
    unsigned long lo, hi, pgoff;
    if (sscanf(line, "%lx-%lx %*4s %lx", &lo, &hi, &pgoff) == 3 && addr >= lo && addr < hi) {
      *offset = addr - lo + pgoff;
      found = 0;
    }
  }
  fclose(m);
  return found;
}

/* addr (run time) resolves to want, by both routes to the link-time address. */
static void check_resolves(fixture *f, const void *addr, const char *want) {
  uint64_t v_bias = (uintptr_t)addr - f->bias, off = 0, v_maps = 0;
  assert_int_equal(maps_offset((uintptr_t)addr, &off), 0);
  assert_int_equal(opf_elf_offset_to_vaddr(&f->t, off, &v_maps), 1);
  assert_true(v_maps == v_bias);
  const opf_elf_sym *s = opf_elf_symtab_find(&f->t, v_bias);
  assert_non_null(s);
  assert_string_equal(s->name, want);
  assert_true(s->addr == v_bias); /* a function's address is its symbol's start */
  assert_true(s->size > 1);
  /* Inside the body and its last byte: the same symbol; one past its end: not this one. */
  assert_ptr_equal(opf_elf_symtab_find(&f->t, v_bias + s->size / 2), s);
  assert_ptr_equal(opf_elf_symtab_find(&f->t, v_bias + s->size - 1), s);
  assert_ptr_not_equal(opf_elf_symtab_find(&f->t, v_bias + s->size), s);
}

static void test_lookup_full(void **state) {
  fixture *f = *state;
  assert_int_equal(f->t.from_symtab, 1);
  assert_true(f->t.n >= 4);
  assert_true(f->t.n_segs >= 2);
  for (size_t i = 1; i < f->t.n; i++)
    assert_true(f->t.syms[i - 1].addr < f->t.syms[i].addr); /* sorted, one name per address */
  check_resolves(f, sym(f, "known_alpha"), "known_alpha");
  check_resolves(f, sym(f, "known_beta"), "known_beta");
  known_fn (*get_local)(void) = (known_fn (*)(void))sym(f, "known_local_ptr");
  check_resolves(f, (const void *)get_local, "known_local_ptr");
  check_resolves(f, (const void *)get_local(), "known_local"); /* only in .symtab */
  /* Calling them proves the addresses are the code we resolved, not PLT stubs. */
  double x[3] = {1, -2, 3};
  assert_true(((known_fn)sym(f, "known_alpha"))(x, 3) == 14.0);
  assert_true(get_local()(x, 3) == -2.0);
  /* Below the first symbol and far outside every segment: nothing. */
  assert_null(opf_elf_symtab_find(&f->t, 0));
  assert_null(opf_elf_symtab_find(&f->t, UINT64_C(1) << 60));
  uint64_t v = 1;
  assert_int_equal(opf_elf_offset_to_vaddr(&f->t, UINT64_C(1) << 40, &v), 0);
  assert_true(v == 0);
}

static void test_lookup_stripped(void **state) {
  fixture *f = *state;
  assert_int_equal(f->t.from_symtab, 0);
  check_resolves(f, sym(f, "known_alpha"), "known_alpha");
  check_resolves(f, sym(f, "known_beta"), "known_beta");
  /* The file-local function has no name left: whatever holds it, it is not called known_local. */
  known_fn (*get_local)(void) = (known_fn (*)(void))sym(f, "known_local_ptr");
  const opf_elf_sym *s = opf_elf_symtab_find(&f->t, (uintptr_t)get_local() - f->bias);
  assert_true(s == NULL || strcmp(s->name, "known_local") != 0);
}

static void test_dynsyms_prefix(void **state) {
  (void)state;
  char **names = NULL;
  int n = -1;
  opf_err err = {0};
  assert_int_equal(opf_elf_dynsyms_with_prefix(OPF_KNOWN_SYMS_LIB, "known_prefix_", &names, &n, &err), OPF_OK);
  assert_int_equal(n, 2);
  int one = 0, two = 0;
  for (int i = 0; i < n; i++) {
    one += strcmp(names[i], "known_prefix_one") == 0;
    two += strcmp(names[i], "known_prefix_two") == 0;
  }
  assert_int_equal(one, 1);
  assert_int_equal(two, 1);
  free(names);
  /* A prefix nothing has: OK, none. Undefined imports (e.g. libc's) never count. */
  assert_int_equal(opf_elf_dynsyms_with_prefix(OPF_KNOWN_SYMS_LIB, "no_such_prefix", &names, &n, &err), OPF_OK);
  assert_int_equal(n, 0);
  assert_null(names);
  assert_int_equal(opf_elf_dynsyms_with_prefix(OPF_KNOWN_SYMS_LIB, "free", &names, &n, &err), OPF_OK);
  assert_int_equal(n, 0);
}

static void test_errors(void **state) {
  (void)state;
  opf_err err = {0};
  opf_elf_symtab t;
  char **names = NULL;
  int n = 0;
  char hex[OPF_BUILD_ID_MAX];
  assert_int_equal(opf_elf_symtab_load("/nonexistent/lib.so", &t, &err), OPF_EIO);
  assert_non_null(strstr(err.msg, "/nonexistent/lib.so"));
  char path[] = "/tmp/opperf-notelf-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, "not an ELF file\n", 16), 16);
  close(fd);
  assert_int_equal(opf_elf_symtab_load(path, &t, &err), OPF_EINVAL);
  assert_non_null(strstr(err.msg, "not an ELF file"));
  assert_int_equal(opf_elf_dynsyms_with_prefix(path, "x", &names, &n, &err), OPF_EINVAL);
  assert_int_equal(opf_elf_build_id(path, hex, sizeof hex, &err), OPF_EINVAL);
  unlink(path);
  /* Linked with --build-id=none. */
  assert_int_equal(opf_elf_build_id(OPF_KNOWN_SYMS_STRIPPED, hex, sizeof hex, &err), OPF_ENOTFOUND);
  assert_non_null(strstr(err.msg, "no GNU build-id"));
  /* A buffer too small for the hex digits is an error, not a truncated id. */
  assert_int_equal(opf_elf_build_id(OPF_KNOWN_SYMS_LIB, hex, 8, &err), OPF_EINVAL);
}

/* `readelf -n path`'s "Build ID: <hex>"; 0 when found. */
static int readelf_build_id(const char *path, char *hex, size_t cap) {
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "readelf -n '%s' 2>/dev/null", path);
  FILE *p = popen(cmd, "r");
  if (!p)
    return -1;
  char line[512];
  int found = -1;
  while (fgets(line, sizeof line, p)) {
    const char *b = strstr(line, "Build ID: ");
    if (b && found) {
      snprintf(hex, cap, "%s", b + 10);
      hex[strcspn(hex, " \r\n")] = '\0';
      found = 0;
    }
  }
  pclose(p);
  return found;
}

static int have_readelf(void) { return system("readelf --version >/dev/null 2>&1") == 0; }

static void check_build_id(const char *path) {
  char want[OPF_BUILD_ID_MAX], got[OPF_BUILD_ID_MAX];
  opf_err err = {0};
  assert_int_equal(readelf_build_id(path, want, sizeof want), 0);
  assert_int_equal(opf_elf_build_id(path, got, sizeof got, &err), OPF_OK);
  assert_true(strlen(got) >= 16);
  assert_string_equal(got, want);
}

static int lib_path(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  char *out = data;
  if (strstr(info->dlpi_name, "libopenblas") || (!out[0] && strstr(info->dlpi_name, "libc.so"))) {
    snprintf(out, 4096, "%s", info->dlpi_name);
    return strstr(info->dlpi_name, "libopenblas") != NULL;
  }
  return 0;
}

static void test_build_id_matches_readelf(void **state) {
  (void)state;
  if (!have_readelf()) {
    fprintf(stderr, "readelf not found (binutils): build-id comparison skipped\n");
    skip();
  }
  check_build_id(OPF_KNOWN_SYMS_LIB);
  /* This test's own executable (the linker's default --build-id) and libopenblas (a
   * distribution library) or libc when not linked here. */
  char self[4096];
  ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
  assert_true(k > 0);
  self[k] = '\0';
  check_build_id(self);
  char lib[4096] = "";
  dl_iterate_phdr(lib_path, lib);
  assert_true(lib[0] != '\0');
  check_build_id(lib);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_lookup_full, setup_full, teardown),
    cmocka_unit_test_setup_teardown(test_lookup_stripped, setup_stripped, teardown),
    cmocka_unit_test(test_dynsyms_prefix),
    cmocka_unit_test(test_errors),
    cmocka_unit_test(test_build_id_matches_readelf),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
