/* AutoTVM logs (tunekit import autotvm): any file is either refused with
 * an error or imported; the store stays consistent. */
#include "fuzz.h"
#include "import/autotvm.h"
#include "store/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tk_store *st;
	autotvm_stats as;
	if (store_open(":memory:", 0, &st))
		abort();
	fuzz_check_rc(autotvm_import(st, fuzz_file(data, size, ".log"), "fuzz", &as));
	store_close(st);
	return 0;
}
