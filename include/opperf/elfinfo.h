/* elfinfo.h: what opperf reads from ELF files with libelf: function symbol tables (to resolve
 * sampled addresses to names), the dynamic symbol table (to find a plugin's operator
 * descriptors) and the GNU build-id note (reproducibility). The library never prints. */
#ifndef OPPERF_ELFINFO_H
#define OPPERF_ELFINFO_H

#include <stddef.h>
#include <stdint.h>

#include "opperf/error.h"

typedef struct opf_elf_sym {
  uint64_t addr;    /* st_value: link-time virtual address */
  uint64_t size;    /* st_size (0: unknown, extends to the next symbol) */
  const char *name; /* points into the table's own storage */
} opf_elf_sym;

typedef struct opf_elf_segment {
  uint64_t offset, vaddr, filesz; /* a PT_LOAD segment: file offset, virtual address, size */
  uint64_t memsz;                 /* size in memory (>= filesz: .bss) */
  int exec;                       /* PF_X: holds code */
} opf_elf_segment;

typedef struct opf_elf_symtab {
  opf_elf_sym *syms;     /* function symbols (STT_FUNC, STT_GNU_IFUNC), sorted by addr */
  size_t n;
  int from_symtab;       /* 1: .symtab (full), 0: only .dynsym (exported symbols) */
  opf_elf_segment *segs; /* PT_LOAD segments, to turn a file offset into a virtual address */
  size_t n_segs;
  char *names;           /* owned storage of the names */
} opf_elf_symtab;

/* Function symbols of the ELF file at path: .symtab when present, else .dynsym. Aliases (one
 * address, several names) keep one name: sized, global, fewest leading underscores first. */
int opf_elf_symtab_load(const char *path, opf_elf_symtab *t, opf_err *err);
/* The symbol whose [addr, addr+size) holds vaddr (size 0: up to the next symbol); NULL if none. */
const opf_elf_sym *opf_elf_symtab_find(const opf_elf_symtab *t, uint64_t vaddr);
/* The virtual address of a file offset (through the PT_LOAD segments): returns 1 and sets
 * *vaddr when offset lies in a segment's file image; returns 0 and sets *vaddr = 0 when outside
 * them. For a sampled ip in a /proc/self/maps line: offset = ip - start + pgoff. */
int opf_elf_offset_to_vaddr(const opf_elf_symtab *t, uint64_t offset, uint64_t *vaddr);
void opf_elf_symtab_free(opf_elf_symtab *t);

/* Names of the defined dynamic symbols that start with prefix (a plugin's descriptors), in
 * symbol-table order; *names is one malloc'd block of pointers and strings (free(*names)).
 * None found: OPF_OK with *n = 0 and *names = NULL. */
int opf_elf_dynsyms_with_prefix(const char *path, const char *prefix, char ***names, int *n, opf_err *err);

/* Room for a build-id of up to 64 bytes in hex and its NUL (ld's default, sha1, is 40 digits). */
#define OPF_BUILD_ID_MAX 129

/* The GNU build-id (NT_GNU_BUILD_ID note) as lowercase hex; OPF_ENOTFOUND when the file has none.
 * Errors (all functions here): OPF_EIO file unreadable, OPF_EINVAL not an ELF file. */
int opf_elf_build_id(const char *path, char *hex, size_t cap, opf_err *err);

#endif
