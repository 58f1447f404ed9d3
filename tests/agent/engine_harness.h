// Pieces every engine test (engine_*.cpp) shares: a block of memory shared by
// the forked "rank" processes of one group, with a process-shared barrier, and
// a client connection that ends the process with a message if it fails.
#ifndef INA_ENGINE_HARNESS_H
#define INA_ENGINE_HARNESS_H

#include <pthread.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>

#include "ina_client.h"

namespace ina_test {

// Maps a T (value-initialised) shared with the processes forked afterwards and
// initialises its process-shared `barrier` member for `participants`.
template <typename T> T *map_shared(unsigned participants)
{
    void *p = mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        std::perror("mmap");
        std::exit(1);
    }
    T *s = new (p) T{};
    pthread_barrierattr_t a;
    pthread_barrierattr_init(&a);
    pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&s->barrier, &a, participants);
    pthread_barrierattr_destroy(&a);
    return s;
}

template <typename T> void unmap_shared(T *s)
{
    pthread_barrier_destroy(&s->barrier);
    s->~T();
    munmap(s, sizeof(T));
}

// INA_TEST_VERBOSE=N passes N to the engine's log.
inline int verbose()
{
    const char *v = std::getenv("INA_TEST_VERBOSE");
    return v != nullptr ? std::atoi(v) : 0;
}

inline ina_client_t *connect_or_die(const char *addr, uint32_t rank)
{
    ina_client_config_t cfg{addr, 10000, 30000, verbose(), 0};
    ina_client_t *c = nullptr;
    char err[256] = "";
    int rc = ina_client_connect(&cfg, &c, err, sizeof(err));
    if (rc != INA_OK) {
        std::fprintf(stderr, "rank %u: connect to %s failed (rc %d): %s\n", rank, addr, rc, err);
        std::_Exit(2);
    }
    return c;
}

} // namespace ina_test

#endif // INA_ENGINE_HARNESS_H
