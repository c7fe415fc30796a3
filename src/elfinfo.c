/* elfinfo.c: ELF reading with libelf (include/opperf/elfinfo.h): function symbol tables with
 * their PT_LOAD segments (the profiler resolves sampled addresses with them), the dynamic
 * symbol prefix scan (plugin descriptors) and the GNU build-id note (the context block). */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opperf/elfinfo.h"

/* One open ELF file: the descriptor must outlive the Elf handle (ELF_C_READ_MMAP). */
typedef struct elf_file {
  int fd;
  Elf *elf;
} elf_file;

static int elf_file_open(const char *path, elf_file *f, opf_err *err) {
  f->fd = -1;
  f->elf = NULL;
  if (elf_version(EV_CURRENT) == EV_NONE)
    return opf_err_set(err, OPF_ESYS, "libelf: %s", elf_errmsg(-1));
  f->fd = open(path, O_RDONLY | O_CLOEXEC);
  if (f->fd < 0)
    return opf_err_set(err, OPF_EIO, "cannot open '%s': %s", path, strerror(errno));
  f->elf = elf_begin(f->fd, ELF_C_READ_MMAP, NULL);
  if (!f->elf || elf_kind(f->elf) != ELF_K_ELF) {
    /* elf_begin accepts any file (ELF_K_NONE): a text file or an archive is not ours. */
    if (f->elf)
      elf_end(f->elf);
    close(f->fd);
    f->elf = NULL;
    f->fd = -1;
    return opf_err_set(err, OPF_EINVAL, "'%s' is not an ELF file", path);
  }
  return OPF_OK;
}

static void elf_file_close(elf_file *f) {
  if (f->elf)
    elf_end(f->elf);
  if (f->fd >= 0)
    close(f->fd);
  f->elf = NULL;
  f->fd = -1;
}

/* The first section of the given type (SHT_SYMTAB, SHT_DYNSYM), or NULL. */
static Elf_Scn *find_section(Elf *elf, Elf64_Word type, GElf_Shdr *shdr) {
  Elf_Scn *scn = NULL;
  while ((scn = elf_nextscn(elf, scn)) != NULL) {
    if (gelf_getshdr(scn, shdr) && shdr->sh_type == type)
      return scn;
  }
  return NULL;
}

static int load_segments(Elf *elf, opf_elf_symtab *t, const char *path, opf_err *err) {
  size_t nph = 0;
  if (elf_getphdrnum(elf, &nph) != 0)
    return opf_err_set(err, OPF_EINVAL, "'%s': no program headers: %s", path, elf_errmsg(-1));
  t->segs = calloc(nph ? nph : 1, sizeof *t->segs);
  if (!t->segs)
    return opf_err_set(err, OPF_ENOMEM, "out of memory reading '%s'", path);
  for (size_t i = 0; i < nph; i++) {
    GElf_Phdr ph;
    if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
      continue;
    opf_elf_segment *s = &t->segs[t->n_segs++];
    s->offset = ph.p_offset;
    s->vaddr = ph.p_vaddr;
    s->filesz = ph.p_filesz;
    s->memsz = ph.p_memsz;
    s->exec = (ph.p_flags & PF_X) != 0;
  }
  return OPF_OK;
}

static int is_function(const GElf_Sym *s) {
  int type = GELF_ST_TYPE(s->st_info);
  return (type == STT_FUNC || type == STT_GNU_IFUNC) && s->st_shndx != SHN_UNDEF && s->st_value != 0;
}

/* Sort by address; at one address (aliases such as memcpy / __memcpy_avx_unaligned) the
 * preferred name comes first: a sized symbol, then global before weak before local, then the
 * name without leading underscores, then the alphabetical one (a stable, deterministic pick). */
typedef struct sym_rank {
  opf_elf_sym sym;
  int bind_rank;
} sym_rank;

static int underscores(const char *s) {
  int n = 0;
  while (s[n] == '_')
    n++;
  return n;
}

static int cmp_sym(const void *a, const void *b) {
  const sym_rank *x = a, *y = b;
  if (x->sym.addr != y->sym.addr)
    return x->sym.addr < y->sym.addr ? -1 : 1;
  if ((x->sym.size == 0) != (y->sym.size == 0))
    return x->sym.size == 0 ? 1 : -1;
  if (x->bind_rank != y->bind_rank)
    return x->bind_rank - y->bind_rank;
  int ux = underscores(x->sym.name), uy = underscores(y->sym.name);
  if (ux != uy)
    return ux - uy;
  return strcmp(x->sym.name, y->sym.name);
}

static int bind_rank(const GElf_Sym *s) {
  switch (GELF_ST_BIND(s->st_info)) {
  case STB_GLOBAL: return 0;
  case STB_WEAK: return 1;
  default: return 2;
  }
}

/* Copies the function symbols of one table section into t (sorted, one name per address). */
static int load_functions(Elf *elf, Elf_Scn *scn, const GElf_Shdr *shdr, opf_elf_symtab *t,
                          const char *path, opf_err *err) {
  Elf_Data *data = elf_getdata(scn, NULL);
  size_t count = (data && shdr->sh_entsize) ? shdr->sh_size / shdr->sh_entsize : 0;
  size_t n = 0, bytes = 0;
  for (size_t i = 0; i < count; i++) {
    GElf_Sym s;
    const char *name;
    if (!gelf_getsym(data, (int)i, &s) || !is_function(&s))
      continue;
    if (!(name = elf_strptr(elf, shdr->sh_link, s.st_name)) || !*name)
      continue;
    n++;
    bytes += strlen(name) + 1;
  }
  sym_rank *tmp = calloc(n ? n : 1, sizeof *tmp);
  t->names = malloc(bytes ? bytes : 1);
  if (!tmp || !t->names) {
    free(tmp);
    return opf_err_set(err, OPF_ENOMEM, "out of memory reading the symbols of '%s'", path);
  }
  char *p = t->names;
  size_t k = 0;
  for (size_t i = 0; i < count && k < n; i++) {
    GElf_Sym s;
    const char *name;
    if (!gelf_getsym(data, (int)i, &s) || !is_function(&s))
      continue;
    if (!(name = elf_strptr(elf, shdr->sh_link, s.st_name)) || !*name)
      continue;
    size_t len = strlen(name) + 1;
    memcpy(p, name, len);
    tmp[k].sym.addr = s.st_value;
    tmp[k].sym.size = s.st_size;
    tmp[k].sym.name = p;
    tmp[k].bind_rank = bind_rank(&s);
    p += len;
    k++;
  }
  qsort(tmp, k, sizeof *tmp, cmp_sym);
  t->syms = calloc(k ? k : 1, sizeof *t->syms);
  if (!t->syms) {
    free(tmp);
    return opf_err_set(err, OPF_ENOMEM, "out of memory reading the symbols of '%s'", path);
  }
  for (size_t i = 0; i < k; i++) {
    if (t->n && t->syms[t->n - 1].addr == tmp[i].sym.addr)
      continue; /* an alias: the preferred name is already in */
    t->syms[t->n++] = tmp[i].sym;
  }
  free(tmp);
  return OPF_OK;
}

int opf_elf_symtab_load(const char *path, opf_elf_symtab *t, opf_err *err) {
  memset(t, 0, sizeof *t);
  elf_file f;
  int rc = elf_file_open(path, &f, err);
  if (rc)
    return rc;
  rc = load_segments(f.elf, t, path, err);
  if (rc == OPF_OK) {
    GElf_Shdr shdr;
    Elf_Scn *scn = find_section(f.elf, SHT_SYMTAB, &shdr);
    t->from_symtab = scn != NULL;
    if (!scn)
      scn = find_section(f.elf, SHT_DYNSYM, &shdr);
    if (scn)
      rc = load_functions(f.elf, scn, &shdr, t, path, err);
    else
      rc = opf_err_set(err, OPF_ENOTFOUND, "'%s' has no symbol table", path);
  }
  elf_file_close(&f);
  if (rc)
    opf_elf_symtab_free(t);
  return rc;
}

/* The PT_LOAD segment that holds a link-time address, or NULL. */
static const opf_elf_segment *segment_of(const opf_elf_symtab *t, uint64_t vaddr) {
  for (size_t i = 0; i < t->n_segs; i++) {
    const opf_elf_segment *s = &t->segs[i];
    if (vaddr >= s->vaddr && vaddr - s->vaddr < s->memsz)
      return s;
  }
  return NULL;
}

const opf_elf_sym *opf_elf_symtab_find(const opf_elf_symtab *t, uint64_t vaddr) {
  if (!t || t->n == 0 || vaddr < t->syms[0].addr)
    return NULL;
  size_t lo = 0, hi = t->n; /* the last symbol with addr <= vaddr: in [lo, hi) */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (t->syms[mid].addr <= vaddr)
      lo = mid;
    else
      hi = mid;
  }
  const opf_elf_sym *s = &t->syms[lo];
  if (s->size)
    return vaddr - s->addr < s->size ? s : NULL;
  /* Unsized (assembly without .size): up to the next symbol, but never past the end of the
   * segment that holds it, so an address in a later segment is not blamed on it. */
  if (lo + 1 < t->n && vaddr >= t->syms[lo + 1].addr)
    return NULL;
  const opf_elf_segment *seg = segment_of(t, s->addr);
  if (seg && segment_of(t, vaddr) != seg)
    return NULL;
  return s;
}

int opf_elf_offset_to_vaddr(const opf_elf_symtab *t, uint64_t offset, uint64_t *vaddr) {
  for (size_t i = 0; i < t->n_segs; i++) {
    const opf_elf_segment *s = &t->segs[i];
    if (offset >= s->offset && offset - s->offset < s->filesz) {
      *vaddr = s->vaddr + (offset - s->offset);
      return 1;
    }
  }
  *vaddr = 0;
  return 0;
}

void opf_elf_symtab_free(opf_elf_symtab *t) {
  if (!t)
    return;
  free(t->syms);
  free(t->segs);
  free(t->names);
  memset(t, 0, sizeof *t);
}

int opf_elf_dynsyms_with_prefix(const char *path, const char *prefix, char ***names, int *n,
                                opf_err *err) {
  *names = NULL;
  *n = 0;
  elf_file f;
  int rc = elf_file_open(path, &f, err);
  if (rc)
    return rc;
  GElf_Shdr shdr;
  Elf_Scn *scn = find_section(f.elf, SHT_DYNSYM, &shdr);
  if (!scn) {
    elf_file_close(&f);
    return opf_err_set(err, OPF_EINVAL, "'%s' has no dynamic symbol table (not a shared library?)", path);
  }
  Elf_Data *data = elf_getdata(scn, NULL);
  size_t count = (data && shdr.sh_entsize) ? shdr.sh_size / shdr.sh_entsize : 0;
  size_t plen = strlen(prefix);
  /* Two passes: count and size, then fill one block (pointers first, then the strings). */
  size_t k = 0, bytes = 0;
  char **out = NULL;
  char *p = NULL;
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < count; i++) {
      GElf_Sym s;
      const char *name;
      if (!gelf_getsym(data, (int)i, &s) || s.st_shndx == SHN_UNDEF)
        continue;
      if (!(name = elf_strptr(f.elf, shdr.sh_link, s.st_name)) || strncmp(name, prefix, plen) != 0)
        continue;
      size_t len = strlen(name) + 1;
      if (pass == 0) {
        k++;
        bytes += len;
      } else {
        memcpy(p, name, len);
        out[(*n)++] = p;
        p += len;
      }
    }
    if (pass == 0) {
      if (k == 0)
        break;
      out = malloc(k * sizeof *out + bytes);
      if (!out) {
        elf_file_close(&f);
        return opf_err_set(err, OPF_ENOMEM, "out of memory reading '%s'", path);
      }
      p = (char *)(out + k);
    }
  }
  elf_file_close(&f);
  *names = out;
  return OPF_OK;
}

/* Looks for NT_GNU_BUILD_ID in one block of notes; 1 when found (hex written). */
static int note_build_id(Elf_Data *data, char *hex, size_t cap) {
  size_t off = 0, name_off, desc_off;
  GElf_Nhdr nh;
  while (data && off < data->d_size && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
    if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
        memcmp((const char *)data->d_buf + name_off, "GNU", 4) != 0)
      continue;
    const unsigned char *d = (const unsigned char *)data->d_buf + desc_off;
    if (cap < 2 * (size_t)nh.n_descsz + 1)
      return -1;
    for (size_t i = 0; i < nh.n_descsz; i++) {
      static const char digits[] = "0123456789abcdef";
      hex[2 * i] = digits[d[i] >> 4];
      hex[2 * i + 1] = digits[d[i] & 15];
    }
    hex[2 * nh.n_descsz] = '\0';
    return 1;
  }
  return 0;
}

int opf_elf_build_id(const char *path, char *hex, size_t cap, opf_err *err) {
  if (cap)
    hex[0] = '\0';
  elf_file f;
  int rc = elf_file_open(path, &f, err);
  if (rc)
    return rc;
  int found = 0;
  Elf_Scn *scn = NULL;
  GElf_Shdr shdr;
  while (!found && (scn = elf_nextscn(f.elf, scn)) != NULL) {
    if (gelf_getshdr(scn, &shdr) && shdr.sh_type == SHT_NOTE)
      found = note_build_id(elf_getdata(scn, NULL), hex, cap);
  }
  /* A file stripped of its section headers still has its notes in PT_NOTE segments. */
  size_t nph = 0;
  if (!found && elf_getphdrnum(f.elf, &nph) == 0) {
    for (size_t i = 0; i < nph && !found; i++) {
      GElf_Phdr ph;
      if (!gelf_getphdr(f.elf, (int)i, &ph) || ph.p_type != PT_NOTE)
        continue;
      Elf_Type type = ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR;
      found = note_build_id(elf_getdata_rawchunk(f.elf, (int64_t)ph.p_offset, ph.p_filesz, type), hex, cap);
    }
  }
  elf_file_close(&f);
  if (found < 0)
    return opf_err_set(err, OPF_EINVAL, "'%s': build-id longer than the buffer (%zu bytes)", path, cap);
  if (!found)
    return opf_err_set(err, OPF_ENOTFOUND, "'%s' has no GNU build-id note", path);
  return OPF_OK;
}
