/* Random numbers: splitmix64 sequences, unpredictable values, hex names
 * (base/kg.h). */
#include "kg.h"

#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

unsigned long long kg_splitmix64(unsigned long long *state)
{
    unsigned long long z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

unsigned long long kg_random64(void)
{
    unsigned long long v = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f || fread(&v, sizeof v, 1, f) != 1) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        v = (unsigned long long)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (unsigned long long)getpid() << 32;
    }
    if (f)
        fclose(f);
    return v;
}

void kg_random_hex(char *buf, size_t size)
{
    static const char hex[] = "0123456789abcdef";
    unsigned long long v = 0;
    for (size_t i = 0; i + 1 < size; i++) {
        if (i % 16 == 0)
            v = kg_random64();
        buf[i] = hex[v & 15];
        v >>= 4;
    }
    if (size)
        buf[size - 1] = '\0';
}
