/* libFuzzer target: the docker tier's attach-stream demultiplexer and the
 * boot report parser (src/docker/stream.c), which read what a container
 * (the program inside it, or a hostile engine) sends. The input is fed in
 * pieces whose sizes come from its first bytes, so every split is tried. */
#include <stdint.h>
#include <string.h>

#include "src/boot/run.h"
#include "src/docker/stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	size_t step = (size_t)data[0] % 64 + 1, cap = (size_t)data[1] * 64 + 1;
	data += 2;
	size -= 2;
	struct capture out, err;
	capture_init(&out, cap);
	capture_init(&err, cap + BOOT_REPORT_MAX);
	struct docker_demux d;
	memset(&d, 0, sizeof d);
	for (size_t off = 0; off < size; off += step)
		docker_demux_feed(&d, (const char *)data + off, size - off < step ? size - off : step,
				  &out, &err);
	struct sandbox_report r;
	if (boot_take_report(&err, "0123456789abcdef", &r))
		boot_report_matches(&r, (int)(size % 256));
	char last[200];
	boot_last_line(&err, last, sizeof last);
	boot_last_line(&out, last, sizeof last);
	capture_free(&out);
	capture_free(&err);
	return 0;
}
