/* How L2 is emptied before each timed sample: the one enum that options,
 * the job protocol and the timer share. */
#ifndef KG_FLUSH_H
#define KG_FLUSH_H

typedef enum kg_flush {
    KG_FLUSH_READ,   /* read 2x L2 of other lines: L2 holds only clean lines (the default) */
    KG_FLUSH_MEMSET, /* write them: dirty lines whose write-back the kernel pays for */
    KG_FLUSH_NONE    /* no flush (--hot, and the roofs' back-to-back streams) */
} kg_flush;

#endif
