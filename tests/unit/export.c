/*
 * Export: the emitted reference C of every operator, on the awkward shapes
 * of tests/unit/codegen.c (primes, ones, strides, padding, transposed and
 * Winograd convolutions), compiled with cc at test time and loaded with
 * dlopen, equals lib/task/ref.c's interpreter in values and in the abs
 * scale; the exported kernel has public names, a header and a Makefile with
 * the target's flags.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include "export/export.h"
#include "space/space.h"
#include "task/ref.h"
#include "unit.h"

static const char *const tasks[] = {
	"dense:m=13,n=37,k=11",
	"dense:m=1,n=1,k=1",
	"dense:m=64,n=48,k=32",
	"dense_relu:m=7,n=40,k=9",
	"batch_matmul:b=3,m=5,n=17,k=8",
	"conv1d:c=3,w=23,k=5,r=3,stride=2,pad=1",
	"conv1d_transpose:c=3,w=11,k=4,r=4,stride=3,pad=1",
	"conv2d:n=2,c=3,h=11,w=7,k=5,r=3,s=2,stride=2,pad=1",
	"conv2d:c=8,h=9,w=9,k=16,r=1,s=1",
	"conv2d_transpose:c=3,h=5,w=4,k=2,r=3,s=3,stride=2,pad=1",
	"depthwise_conv2d:c=5,h=13,w=9,r=3,s=3,stride=2,pad=1",
	"conv2d_nchwc:c=6,h=7,w=5,k=8,cb=3,kb=4,stride=2,pad=1",
	"depthwise_conv2d_nchwc:c=8,h=9,w=7,cb=4,pad=1",
	"layout_transform:c=8,h=5,w=3,ib=1,ob=4",
	"layout_transform:n=2,c=6,h=3,w=7,ib=3,ob=1",
	"conv2d_winograd:c=3,h=7,w=9,k=4,m=2",
	"conv2d_winograd:c=2,h=10,w=6,k=3,m=4,pad=2",
};

typedef int (*ref_fn)(double *out, double *outabs, const float *const *in);

static char dir[64];

static int write_text(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	int bad = fputs(s, f) < 0;
	return fclose(f) || bad ? -1 : 0;
}

TEST(test_setup)
{
	snprintf(dir, sizeof dir, "/tmp/tunekit-unit-export-XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
}

TEST(test_every_operator_is_covered)
{
	for (int i = 0; i < te_nops; i++) {
		int found = 0;
		for (int j = 0; j < ArraySize(tasks); j++)
			found |= !strncmp(tasks[j], te_ops[i].name, strlen(te_ops[i].name)) &&
			         tasks[j][strlen(te_ops[i].name)] == ':';
		if (!found)
			fprintf(stderr, "operator %s has no task in tests/unit/export.c\n", te_ops[i].name);
		CHECK(found);
	}
}

TEST(test_kernel_names)
{
	te_prog *p;
	CHECK_EQ_INT(te_task_parse("conv2d:c=64,h=56,w=56,k=64,pad=1", &p), TK_OK);
	char *n = ex_kernel_name(p);
	CHECK_EQ_STR(n, "conv2d_n1_c64_h56_w56_k64_r3_s3_stride1_pad1");
	free(n);
	te_prog_free(p);
}

/* Emit the references of all tasks into one file, build it, and compare each
 * with ref_compute on the same random inputs. */
TEST(test_reference_matches_interpreter)
{
	te_prog *p[ArraySize(tasks)] = { 0 };
	char *name[ArraySize(tasks)] = { 0 };
	char src[128], so[128], cmd[512];
	tk_sb sb;
	tk_sb_init(&sb);
	tk_sb_puts(&sb, ex_ref_prelude);
	for (int i = 0; i < ArraySize(tasks); i++) {
		CHECK_EQ_INT(te_task_parse(tasks[i], &p[i]), TK_OK);
		if (!p[i])
			goto done;
		name[i] = ex_kernel_name(p[i]);
		CHECK_EQ_INT(ex_ref_function(&sb, p[i], name[i]), TK_OK);
	}
	CHECK(!sb.oom);
	snprintf(src, sizeof src, "%s/ref.c", dir);
	snprintf(so, sizeof so, "%s/ref.so", dir);
	CHECK_EQ_INT(write_text(src, sb.s), 0);
	snprintf(cmd, sizeof cmd, "cc -O1 -shared -fPIC -Wall -Wextra -Werror -o '%s' '%s'", so, src);
	CHECK_EQ_INT(system(cmd), 0);
	void *dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
	CHECK(dl != NULL);
	if (!dl) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		goto done;
	}
	for (int i = 0; i < ArraySize(tasks); i++) {
		const te_prog *q = p[i];
		char sym[256];
		ref_fn f;
		snprintf(sym, sizeof sym, "ref_%s", name[i]);
		*(void **)&f = dlsym(dl, sym);
		CHECK(f != NULL);
		if (!f)
			continue;
		float *in[TE_MAXTENSOR] = { 0 };
		size_t n = (size_t)q->tensor[q->output].size;
		double *want = malloc(n * sizeof *want), *wantabs = malloc(n * sizeof *wantabs);
		double *got = malloc(n * sizeof *got), *gotabs = malloc(n * sizeof *gotabs);
		for (int j = 0; j < q->ninput; j++)
			in[j] = malloc((size_t)q->tensor[q->input[j]].size * sizeof(float));
		ref_random_inputs(q, 7, in);
		CHECK_EQ_INT(ref_compute(q, (const float *const *)in, want, wantabs), TK_OK);
		CHECK_EQ_INT(f(got, gotabs, (const float *const *)in), 0);
		size_t bad = 0, exact = 0, nonzero = 0, clipped = 0;
		for (size_t e = 0; e < n; e++) {
			double tol = 1e-12 * wantabs[e] + 1e-300;
			if (!(fabs(got[e] - want[e]) <= tol) || !(fabs(gotabs[e] - wantabs[e]) <= tol)) {
				if (!bad++)
					fprintf(stderr, "%s: out[%zu] = %.17g (abs %.17g), interpreter %.17g "
					        "(abs %.17g)\n", tasks[i], e, got[e], gotabs[e], want[e], wantabs[e]);
			}
			exact += got[e] == want[e] && gotabs[e] == wantabs[e];
			nonzero += want[e] != 0;
			clipped += want[e] == 0 && wantabs[e] > 0;
		}
		CHECK_EQ_INT(bad, 0);
		/* the comparison means something: outputs are mostly nonzero */
		CHECK(nonzero > 0);
		if (exact != n)
			fprintf(stderr, "note: %s: %zu of %zu elements equal to the last bit\n", tasks[i],
			        exact, n);
		if (!strncmp(tasks[i], "dense_relu", 10))
			CHECK(clipped > 0);
		for (int j = 0; j < q->ninput; j++)
			free(in[j]);
		free(want);
		free(wantabs);
		free(got);
		free(gotabs);
	}
	dlclose(dl);
done:
	for (int i = 0; i < ArraySize(tasks); i++) {
		free(name[i]);
		te_prog_free(p[i]);
	}
	tk_sb_free(&sb);
}

/* A wrong reference is caught: the same check on a reference of another
 * shape's program must not pass (guards against comparing a thing with
 * itself). */
TEST(test_reference_differs_when_program_differs)
{
	te_prog *a, *b;
	CHECK_EQ_INT(te_task_parse("conv2d:c=3,h=6,w=6,k=2,pad=1", &a), TK_OK);
	CHECK_EQ_INT(te_task_parse("conv2d:c=3,h=6,w=6,k=2,pad=1,stride=1,r=3,s=3", &b), TK_OK);
	tk_sb s1, s2;
	tk_sb_init(&s1);
	tk_sb_init(&s2);
	CHECK_EQ_INT(ex_ref_function(&s1, a, "x"), TK_OK);
	CHECK_EQ_INT(ex_ref_function(&s2, b, "x"), TK_OK);
	CHECK_EQ_STR(s1.s, s2.s); /* same canonical program, same text */
	te_prog_free(b);
	CHECK_EQ_INT(te_task_parse("conv2d:c=3,h=6,w=6,k=2,pad=0", &b), TK_OK);
	tk_sb_clear(&s2);
	CHECK_EQ_INT(ex_ref_function(&s2, b, "x"), TK_OK);
	CHECK(strcmp(s1.s, s2.s) != 0);
	CHECK(strstr(s1.s, "d2_ >= 0 && d2_ < 6") != NULL); /* the padding guard */
	CHECK_EQ_INT(ex_ref_function(&s2, b, "not an identifier"), TK_EUNSUPP);
	tk_sb_free(&s1);
	tk_sb_free(&s2);
	te_prog_free(a);
	te_prog_free(b);
}

TEST(test_exported_kernel)
{
	tk_target t;
	ex_kernel k;
	ex_meta m = { "some cpu|avx2|gcc \"12\"|-O3|threads=1", 1.5e-6, 42 };
	CHECK_EQ_INT(tk_target_parse("native", &t), TK_OK);
	CHECK_EQ_INT(ex_kernel_create("dense:m=5,n=7,k=3", "bogus=1", &t, &m, &k), TK_EINVAL);
	CHECK(k.name == NULL);
	CHECK_EQ_INT(ex_kernel_create("dense:q=1", "x", &t, &m, &k), TK_EINVAL);
	te_prog *p;
	sp_space *sp;
	sp_config c;
	tk_sb sb;
	CHECK_EQ_INT(te_task_parse("dense:m=5,n=7,k=3", &p), TK_OK);
	CHECK_EQ_INT(sp_space_create(p, &sp), TK_OK);
	sp_naive(sp, &c);
	tk_sb_init(&sb);
	sp_format(&sb, sp, &c);
	CHECK_EQ_INT(ex_kernel_create("dense:n=7,m=5,k=3", sb.s, &t, &m, &k), TK_OK);
	CHECK_EQ_STR(k.name, "dense_m5_n7_k3");
	CHECK_EQ_STR(k.task, "dense:k=3,m=5,n=7");
	CHECK_EQ_STR(k.config, sb.s);
	CHECK_EQ_INT(k.out_n, 35);
	CHECK_EQ_INT(k.ninput, 2);
	CHECK_EQ_INT(k.in_n[0], 15);
	CHECK_EQ_INT(k.in_n[1], 21);
	CHECK(k.kernel_c && strstr(k.kernel_c, "void tk_dense_m5_n7_k3(float *const *bufs, float *ws)"));
	CHECK(k.kernel_c && strstr(k.kernel_c, "tk_dense_m5_n7_k3_workspace_floats ="));
	CHECK(k.kernel_c && strstr(k.kernel_c, "#include \"dense_m5_n7_k3.h\""));
	CHECK(k.kernel_c && !strstr(k.kernel_c, "tk_kernel("));
	CHECK(k.header_h && strstr(k.header_h, "void tk_dense_m5_n7_k3(float *const *bufs, float *ws);"));
	CHECK(k.header_h && strstr(k.header_h, "#define TK_DENSE_M5_N7_K3_TASK \"dense:k=3,m=5,n=7\""));
	CHECK(k.header_h && strstr(k.header_h, "gcc \\\"12\\\""));
	CHECK(k.header_h && strstr(k.header_h, "bufs[1]  input  A[5, 3]"));
	CHECK(k.ref_c && strstr(k.ref_c, "int ref_dense_m5_n7_k3(double *out, double *outabs"));

	/* the folder builds warning-free with the target's flags, and its test
	 * passes */
	char path[128], cmd[1024], flags[400] = "";
	snprintf(path, sizeof path, "%s/k", dir);
	CHECK_EQ_INT(ex_write_dir(path, &k, 1, &t), TK_OK);
	for (char *w = strtok(t.cflags, " "); w; w = strtok(NULL, " "))
		if (strcmp(w, "-shared") && strcmp(w, "-fPIC"))
			snprintf(flags + strlen(flags), sizeof flags - strlen(flags), "%s ", w);
	snprintf(cmd, sizeof cmd, "make -s -C '%s' 'CFLAGS=%s-Wall -Wextra -Werror' "
	         "'REF_CFLAGS=-O1 -Wall -Wextra -Werror' >'%s/out' && grep -q '^OK dense_m5_n7_k3 ' "
	         "'%s/out' && test -s '%s/README'", path, flags, path, path, path);
	CHECK_EQ_INT(system(cmd), 0);

	char *mk = ex_makefile(&k, 1, &t);
	CHECK(mk && !strstr(mk, "-shared") && !strstr(mk, "-fPIC") && !strstr(mk, "-fopenmp"));
	free(mk);
	ex_kernel_free(&k);
	CHECK_EQ_INT(tk_target_parse("cpu:threads=2", &t), TK_OK);
	CHECK_EQ_INT(ex_kernel_create("dense:n=7,m=5,k=3", sb.s, &t, NULL, &k), TK_OK);
	mk = ex_makefile(&k, 1, &t);
	CHECK(mk && strstr(mk, "-fopenmp") && !strstr(mk, "-shared"));
	free(mk);
	ex_kernel_free(&k);
	ex_kernel_free(&k); /* twice is fine */
	tk_sb_free(&sb);
	sp_space_free(sp);
	te_prog_free(p);
}

TEST(test_teardown)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	CHECK_EQ_INT(system(cmd), 0);
}

UNIT_MAIN(test_setup, test_every_operator_is_covered, test_kernel_names,
          test_reference_matches_interpreter, test_reference_differs_when_program_differs,
          test_exported_kernel, test_teardown)
