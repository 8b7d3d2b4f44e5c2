/* Kernel objects (the compile cache's .so files): the reader of
 * tk_workspace_floats from the file, which the measuring child runs on the
 * object before it loads it. Any bytes: an error or a value, never a read
 * outside the file. */
#include <fcntl.h>

#include "fuzz.h"
#include "measure/run.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_file(data, size, ".so");
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		abort();
	unsigned long n = 0;
	int rc = run_object_workspace(fd, &n);
	fuzz_check_rc(rc);
	if (rc != TK_OK && n != 0)
		abort();
	close(fd);
	return 0;
}
