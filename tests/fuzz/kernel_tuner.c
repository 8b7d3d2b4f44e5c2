/* Kernel Tuner cache files (tunekit import kernel-tuner), plain JSON (a
 * gzip header in the input exercises the gzip path too). */
#include "fuzz.h"
#include "import/kernel_tuner.h"
#include "store/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tk_store *st;
	kt_stats ks;
	if (store_open(":memory:", 0, &st))
		abort();
	fuzz_check_rc(kt_import(st, fuzz_file(data, size, ".json"), "fuzz-device", "fuzz", &ks));
	store_close(st);
	return 0;
}
