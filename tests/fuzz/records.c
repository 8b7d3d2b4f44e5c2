/* Record streams (the TSV that stages pipe to each other on stdin). */
#include "fuzz.h"
#include "record/record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0; /* fmemopen refuses size 0 on some libcs */
	rec_stream rs;
	const char *task, *config;
	int64_t id;
	int got;
	rec_stream_init(&rs, f, "fuzz");
	while ((got = rec_stream_next(&rs, &task, &config, &id)) > 0)
		if ((task && strlen(task) > size) || (config && strlen(config) > size))
			abort();
	if (got < 0)
		fuzz_check_rc(-got);
	rec_stream_free(&rs);
	fclose(f);
	return 0;
}
