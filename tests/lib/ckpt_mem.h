/* For the checkpoint format's tests: memory as the two ends of a stream
 * (io/ckpt_object.h), a source that hands its bytes out in uneven pieces
 * so that the streams' refilling is exercised, and a growing sink. */
#ifndef EBB_TEST_CKPT_MEM_H
#define EBB_TEST_CKPT_MEM_H

#include <stddef.h>
#include <sys/types.h>

struct ckpt_mem_src {
    const unsigned char *p;
    size_t len, off;
    size_t step;    /* the most bytes one read returns; 0: all it may */
};

struct ckpt_mem_sink {
    unsigned char *p;   /* malloc'd; free it */
    size_t len, cap;
    size_t fail_after;  /* when not 0: writes past this many bytes fail (EBB_EIO) */
};

ssize_t ckpt_mem_read(void *arg, void *buf, size_t len);
int ckpt_mem_write(void *arg, const void *buf, size_t len);

/* `n` bytes of a fixed pseudo-random sequence for `seed`, malloc'd. */
unsigned char *ckpt_mem_pattern(size_t n, unsigned seed);

#endif
