/* ELF side of sym: open, layout, build-id, symbol tables, code bytes. */
#include "sym/sym_impl.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/oob_log.h"

static pthread_once_t elf_once = PTHREAD_ONCE_INIT;

static void elf_init(void)
{
	elf_version(EV_CURRENT);
}

static int add_load(struct sym_binary *b, const GElf_Phdr *ph, size_t i, uint64_t *minv,
		    struct oob_err *err)
{
	uint64_t filesz = ph->p_filesz < ph->p_memsz ? ph->p_filesz : ph->p_memsz;

	if (ph->p_vaddr + ph->p_memsz < ph->p_vaddr)
		return oob_err_set(err, -EINVAL, "%s: segment %zu wraps around the address space",
				   b->path, i);
	if (ph->p_offset > b->image_size || filesz > b->image_size - ph->p_offset)
		return oob_err_set(
		    err, -EINVAL,
		    "%s: segment %zu: file bytes at offset %#llx (+%#llx) lie beyond "
		    "the end of the file (%zu bytes)",
		    b->path, i, (unsigned long long)ph->p_offset, (unsigned long long)filesz,
		    b->image_size);
	if (ph->p_vaddr < *minv)
		*minv = ph->p_vaddr;
	if (!(ph->p_flags & PF_X) || !ph->p_memsz)
		return 0;
	if (ph->p_vaddr < b->text_lo)
		b->text_lo = ph->p_vaddr;
	if (ph->p_vaddr + ph->p_memsz > b->text_hi)
		b->text_hi = ph->p_vaddr + ph->p_memsz;
	if (filesz) {
		b->segs = oob_xrealloc(b->segs, (b->nsegs + 1) * sizeof(*b->segs));
		b->segs[b->nsegs++] = (struct sym_seg){ph->p_vaddr, filesz, ph->p_offset};
	}
	return 0;
}

static int elf_layout(struct sym_binary *b, struct oob_err *err)
{
	size_t n;
	uint64_t minv = UINT64_MAX;

	if (elf_getphdrnum(b->elf, &n) < 0)
		return oob_err_set(err, -EINVAL, "%s: program headers: %s", b->path,
				   elf_errmsg(-1));
	b->text_lo = UINT64_MAX; /* no executable segment leaves [0, 0) below */
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(b->elf, (int)i, &ph))
			return oob_err_set(err, -EINVAL, "%s: program header %zu: %s", b->path, i,
					   elf_errmsg(-1));
		if (ph.p_type == PT_LOAD && add_load(b, &ph, i, &minv, err) < 0)
			return err ? err->code : -EINVAL;
	}
	if (b->text_lo > b->text_hi)
		b->text_lo = b->text_hi = 0;
	b->load_base = minv == UINT64_MAX ? 0 : minv & ~(uint64_t)0xfff;
	return 0;
}

static void elf_build_id(struct sym_binary *b)
{
	const unsigned char *id;
	ssize_t n = dwelf_elf_gnu_build_id(b->elf, (const void **)&id);

	if (n <= 0) {
		b->build_id = sym_sha256_id(b->image, b->image_size);
		return;
	}
	b->build_id = oob_xmalloc(2 * (size_t)n + 1);
	for (ssize_t i = 0; i < n; i++)
		sprintf(b->build_id + 2 * i, "%02x", id[i]);
}

/* An accepted symbol before zero sizes are resolved. */
struct rawsym {
	uint64_t lo, size, sec_end;
	size_t shndx;
	struct sym_cand c;
};

static int cmp_rawsym(const void *pa, const void *pb)
{
	const struct rawsym *a = pa, *b = pb;

	if (a->shndx != b->shndx)
		return a->shndx < b->shndx ? -1 : 1;
	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	return a->c.rank < b->c.rank ? -1 : a->c.rank > b->c.rank;
}

/*
 * Which symbols name code, and how firmly (enum sym_tier): functions, and
 * sized untyped symbols in code (assembly entry points such as the kernel's
 * handle_exception), as symbols; untyped labels of size 0 in code (crt1's
 * load_gp) only where nothing else covers them, because most of them are
 * labels inside a function (the kernel's ret_from_syscall in
 * handle_exception). 0 for symbols we skip: mapping symbols ($x, $d),
 * assembler locals (.L), data.
 */
static int sym_tier(struct sym_binary *b, const GElf_Sym *s, const char *name, GElf_Shdr *sec)
{
	int type = GELF_ST_TYPE(s->st_info);
	Elf_Scn *scn;

	if (!name || !*name || name[0] == '$' || strstr(name, ".L"))
		return 0;
	if (s->st_shndx == SHN_UNDEF || s->st_shndx >= SHN_LORESERVE)
		return 0;
	if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
		return 0;
	scn = elf_getscn(b->elf, s->st_shndx);
	if (!scn || !gelf_getshdr(scn, sec) || sec->sh_type == SHT_NOBITS)
		return 0;
	if (type != STT_NOTYPE)
		return SYM_TIER_SYMBOL;
	if (!(sec->sh_flags & SHF_EXECINSTR))
		return 0;
	return s->st_size ? SYM_TIER_SYMBOL : SYM_TIER_LABEL;
}

static uint32_t sym_quality(const GElf_Sym *s, const char *name)
{
	int bind = GELF_ST_BIND(s->st_info), type = GELF_ST_TYPE(s->st_info);

	return (type != STT_NOTYPE ? 8u : 0u) + (bind == STB_GLOBAL ? 4u : 0u) +
	       (bind == STB_WEAK ? 2u : 0u) + (name[0] != '_' ? 1u : 0u);
}

static void scan_symtab(struct sym_binary *b, Elf_Scn *scn, const GElf_Shdr *sh, struct rawsym **v,
			size_t *n, size_t *cap)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t entsz = gelf_fsize(b->elf, ELF_T_SYM, 1, EV_CURRENT);
	size_t count = d && entsz ? d->d_size / entsz : 0;

	for (size_t i = 1; i < count; i++) {
		GElf_Sym s;
		GElf_Shdr sec;
		const char *name;
		if (!gelf_getsym(d, (int)i, &s))
			break;
		name = elf_strptr(b->elf, sh->sh_link, s.st_name);
		int tier = sym_tier(b, &s, name, &sec);
		if (!tier)
			continue;
		oob_xgrow((void **)v, cap, *n + 1, sizeof(**v));
		(*v)[*n] = (struct rawsym){
		    .lo = s.st_value,
		    .size = s.st_size,
		    .sec_end = sec.sh_addr + sec.sh_size,
		    .shndx = s.st_shndx,
		    .c = {.lo = s.st_value,
			  .entry = s.st_value,
			  .name = name,
			  .flags = SYM_F_SYMTAB |
				   (GELF_ST_BIND(s.st_info) != STB_LOCAL ? SYM_F_GLOBAL : 0),
			  .tier = (uint8_t)tier,
			  .quality = sym_quality(&s, name),
			  .rank = (uint32_t)*n},
		};
		(*n)++;
	}
}

/* .symtab and .dynsym; a size-0 symbol extends to the next one in its section. */
static void elf_symbols(struct sym_binary *b, struct sym_cands *c)
{
	struct rawsym *v = NULL;
	size_t n = 0, cap = 0;
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(b->elf, scn))) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) &&
		    (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM))
			scan_symtab(b, scn, &sh, &v, &n, &cap);
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_rawsym);
	for (size_t i = 0; i < n; i++) {
		struct rawsym *r = &v[i];
		uint64_t hi = r->lo + r->size;
		if (!r->size) {
			size_t j = i + 1;
			while (j < n && v[j].shndx == r->shndx && v[j].lo == r->lo)
				j++;
			hi = j < n && v[j].shndx == r->shndx ? v[j].lo : r->sec_end;
		}
		if (hi < r->lo) /* wrapped: a hostile size */
			continue;
		r->c.hi = hi;
		sym_cands_push(c, &r->c);
	}
	free(v);
}

/* The section called name, or NULL. */
static Elf_Scn *find_scn(struct sym_binary *b, const char *name, GElf_Shdr *sh)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(b->elf, &shstrndx) < 0)
		return NULL;
	while ((scn = elf_nextscn(b->elf, scn))) {
		const char *n;
		if (!gelf_getshdr(scn, sh))
			continue;
		n = elf_strptr(b->elf, shstrndx, sh->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

static void push_plt(struct sym_binary *b, struct sym_cands *c, uint64_t lo, uint64_t size,
		     const char *name)
{
	struct sym_cand x = {
	    .lo = lo, .hi = lo + size, .entry = lo, .flags = SYM_F_SYMTAB, .tier = SYM_TIER_SYMBOL};

	x.name = name;
	sym_cands_push(c, &x);
}

/*
 * PLT stubs have no symbols; like objdump and perf we name them "name@plt"
 * after the .rela.plt relocation of their slot (stubs are laid out in
 * relocation order), and the lazy-binding header ".plt". Layouts: RISC-V
 * psABI (32-byte header, 16-byte stubs); x86-64 (16 and 16, or the stubs in
 * .plt.sec with IBT). .plt.got and other layouts stay unnamed.
 */
static void elf_plt(struct sym_binary *b, struct sym_cands *c)
{
	GElf_Shdr plt, rela, sec, dynsym;
	Elf_Scn *scn_rela = find_scn(b, ".rela.plt", &rela), *scn_sec;
	Elf_Data *rd, *sd;
	uint64_t header, start, end;
	size_t n;

	if (!find_scn(b, ".plt", &plt) || !scn_rela || plt.sh_type == SHT_NOBITS)
		return;
	if (b->machine == EM_RISCV)
		header = 32;
	else if (b->machine == EM_X86_64)
		header = 16;
	else
		return;
	start = plt.sh_addr + header;
	end = plt.sh_addr + plt.sh_size;
	scn_sec = b->machine == EM_X86_64 ? find_scn(b, ".plt.sec", &sec) : NULL;
	if (scn_sec) {
		start = sec.sh_addr;
		end = sec.sh_addr + sec.sh_size;
		header = plt.sh_size;
	}
	push_plt(b, c, plt.sh_addr, header, ".plt");
	rd = elf_getdata(scn_rela, NULL);
	if (!rd || !gelf_getshdr(elf_getscn(b->elf, rela.sh_link), &dynsym) ||
	    !(sd = elf_getdata(elf_getscn(b->elf, rela.sh_link), NULL)))
		return;
	n = rela.sh_entsize ? rela.sh_size / rela.sh_entsize : 0;
	for (size_t i = 0; i < n && start + 16 * (i + 1) <= end; i++) {
		GElf_Rela r;
		GElf_Sym s;
		const char *name;
		char *full;
		if (!gelf_getrela(rd, (int)i, &r) ||
		    !gelf_getsym(sd, (int)GELF_R_SYM(r.r_info), &s))
			break;
		name = elf_strptr(b->elf, dynsym.sh_link, s.st_name);
		if (!name || !*name)
			continue;
		full = oob_arena_alloc(b->arena, strlen(name) + sizeof("@plt"));
		strcpy(stpcpy(full, name), "@plt");
		push_plt(b, c, start + 16 * i, 16, full);
	}
}

static int elf_open_file(struct sym_binary *b, struct oob_err *err)
{
	struct stat st;

	b->fd = open(b->path, O_RDONLY | O_CLOEXEC);
	if (b->fd < 0)
		return oob_err_set(err, -errno, "%s: %s", b->path, strerror(errno));
	if (fstat(b->fd, &st) < 0 || !S_ISREG(st.st_mode))
		return oob_err_set(err, -EINVAL, "%s: not a regular file", b->path);
	b->elf = elf_begin(b->fd, ELF_C_READ_MMAP, NULL);
	if (!b->elf || elf_kind(b->elf) != ELF_K_ELF)
		return oob_err_set(err, -EINVAL, "%s: not an ELF file", b->path);
	if (gelf_getclass(b->elf) == ELFCLASSNONE)
		return oob_err_set(err, -ENOTSUP, "%s: unknown ELF class", b->path);
	b->image = (const unsigned char *)elf_rawfile(b->elf, &b->image_size);
	if (!b->image)
		return oob_err_set(err, -EINVAL, "%s: %s", b->path, elf_errmsg(-1));
	return 0;
}

static int has_debug_info(struct sym_binary *b)
{
	GElf_Shdr sh;

	if (find_scn(b, ".debug_info", &sh) || find_scn(b, ".zdebug_info", &sh))
		return sh.sh_type != SHT_NOBITS;
	return 0;
}

/* Indexes b, whose ELF is open; frees it on error. */
static struct sym_binary *elf_index(struct sym_binary *b, struct oob_err *err)
{
	const char *path = b->path;
	struct sym_cands c = {0};
	GElf_Ehdr eh;

	if (!gelf_getehdr(b->elf, &eh)) {
		oob_err_set(err, -EINVAL, "%s: ELF header: %s", path, elf_errmsg(-1));
		goto fail;
	}
	b->machine = eh.e_machine;
	b->pie = eh.e_type == ET_DYN;
	b->entry = eh.e_entry;
	if (elf_layout(b, err) < 0)
		goto fail;
	elf_build_id(b);
	if (has_debug_info(b)) {
		b->dw = dwarf_begin_elf(b->elf, DWARF_C_READ, NULL);
		if (!b->dw)
			OOB_WARN("%s: unreadable DWARF (%s): using symbols only", path,
				 dwarf_errmsg(-1));
	}
	if (b->dw)
		sym_dwarf_index(b, &c);
	elf_symbols(b, &c);
	elf_plt(b, &c);
	sym_tab_build(b, &c);
	free(c.v);
	return b;
fail:
	sym_binary_free(b);
	return NULL;
}

struct sym_binary *sym_binary_open(const char *path, struct oob_err *err)
{
	pthread_once(&elf_once, elf_init);
	struct sym_binary *b = sym_bin_alloc(path);
	if (elf_open_file(b, err) < 0) {
		sym_binary_free(b);
		return NULL;
	}
	return elf_index(b, err);
}

/* The link-time value of the symbol called name in b's .symtab, 0 if none. */
static uint64_t symtab_value(const struct sym_binary *b, const char *name)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(b->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;
			if (gelf_getsym(d, (int)i, &s) &&
			    (n = elf_strptr(b->elf, sh.sh_link, s.st_name)) && !strcmp(n, name))
				return s.st_value;
		}
	}
	return 0;
}

/* Copies [lo, hi) of outer's file image as loaded (any PT_LOAD: the
 * binary's own segments are its executable ones only); 0 if not all there. */
static int load_bytes(const struct sym_binary *outer, uint64_t lo, uint64_t hi, unsigned char *buf)
{
	size_t n;
	if (elf_getphdrnum(outer->elf, &n) < 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(outer->elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    lo < ph.p_vaddr || hi - ph.p_vaddr > ph.p_filesz ||
		    ph.p_offset + ph.p_filesz > outer->image_size)
			continue;
		memcpy(buf, outer->image + ph.p_offset + (lo - ph.p_vaddr), hi - lo);
		return 1;
	}
	return 0;
}

struct sym_binary *sym_binary_open_embedded(const struct sym_binary *outer, const char *start,
					    const char *end, struct oob_err *err)
{
	if (!outer->elf)
		return NULL;
	uint64_t lo = symtab_value(outer, start), hi = symtab_value(outer, end);
	if (!lo || hi <= lo || hi - lo > (64u << 20))
		return NULL;
	pthread_once(&elf_once, elf_init);
	char *path = oob_xmalloc(strlen(outer->path) + strlen(start) + 2);
	sprintf(path, "%s:%s", outer->path, start);
	struct sym_binary *b = sym_bin_alloc(path);
	free(path);
	b->own_image = oob_xmalloc(hi - lo);
	if (!load_bytes(outer, lo, hi, b->own_image)) {
		oob_err_set(err, -EINVAL, "%s: %s..%s is not in the file", outer->path, start, end);
		goto fail;
	}
	b->elf = elf_memory((char *)b->own_image, hi - lo);
	if (!b->elf || elf_kind(b->elf) != ELF_K_ELF || gelf_getclass(b->elf) == ELFCLASSNONE) {
		oob_err_set(err, -EINVAL, "%s: not an ELF image", b->path);
		goto fail;
	}
	b->image = b->own_image;
	b->image_size = hi - lo;
	return elf_index(b, err);
fail:
	sym_binary_free(b);
	return NULL;
}

size_t sym_binary_read(const struct sym_binary *b, uint64_t addr, void *buf, size_t n)
{
	for (size_t i = 0; i < b->nsegs; i++) {
		const struct sym_seg *s = &b->segs[i];
		uint64_t off = addr - s->vaddr;
		if (addr < s->vaddr || off >= s->filesz)
			continue;
		if (n > s->filesz - off)
			n = (size_t)(s->filesz - off);
		memcpy(buf, b->image + s->offset + off, n);
		return n;
	}
	return 0;
}
