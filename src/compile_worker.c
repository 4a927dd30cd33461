/* A context's compile worker: one thread, started by the first job, compiling the queued variants
 * oldest first (compile_worker_internal.h says what for). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile_worker_internal.h"

#define JOB_MESSAGE_MAX 8192

enum job_state { JOB_QUEUED, JOB_COMPILING, JOB_DONE, JOB_FAILED, JOB_TAKEN };

struct fc_compile_job {
    struct fc_variant variant;
    enum job_state state;
    struct fc_cubin cubin;       /* JOB_DONE: the compiled kernel, until it is handed out or stored */
    enum fc_status status;       /* JOB_FAILED */
    char *message;               /* JOB_FAILED: why (NULL if there was no memory for it) */
    struct fc_compile_job *next;
};

void fc_compile_worker_init(struct fc_compile_worker *w, struct fc_jit *jit)
{
    memset(w, 0, sizeof *w);
    w->jit = jit;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    pthread_cond_init(&w->idle, NULL);
}

/* The oldest queued job (the list is newest first), under the lock. */
static struct fc_compile_job *next_queued(struct fc_compile_worker *w)
{
    struct fc_compile_job *found = NULL;
    for (struct fc_compile_job *j = w->jobs; j; j = j->next)
        if (j->state == JOB_QUEUED)
            found = j;
    return found;
}

static void *work(void *arg)
{
    struct fc_compile_worker *w = arg;
    char *msg = malloc(JOB_MESSAGE_MAX);
    pthread_mutex_lock(&w->lock);
    for (;;) {
        struct fc_compile_job *job = NULL;
        while (!w->stopping && !(job = next_queued(w)))
            pthread_cond_wait(&w->wake, &w->lock);
        if (w->stopping)
            break;
        job->state = JOB_COMPILING;
        const struct fc_variant variant = job->variant;
        pthread_mutex_unlock(&w->lock);   /* jobs are freed only after the thread is joined */
        struct fc_cubin cubin;
        char none[1] = "";
        enum fc_status status = fc_jit_compile_detached(w->jit, &variant, &cubin, msg ? msg : none,
                                                        msg ? JOB_MESSAGE_MAX : sizeof none);
        pthread_mutex_lock(&w->lock);
        if (status == FC_OK) {
            job->cubin = cubin;
            job->state = JOB_DONE;
        } else {
            job->status = status;
            job->message = msg ? strdup(msg) : NULL;
            job->state = JOB_FAILED;
        }
        pthread_cond_broadcast(&w->idle);
    }
    pthread_mutex_unlock(&w->lock);
    free(msg);
    return NULL;
}

/* Starts the thread with every signal blocked, so that the process's signals go to its own threads. */
static int start(struct fc_compile_worker *w)
{
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    int rc = pthread_create(&w->thread, NULL, work, w);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    if (rc == 0) {
        w->started = 1;
        w->owner = getpid();
    }
    return rc;
}

/* A child forked after the thread started: the thread, and whoever held the lock, are the parent's. */
static int forked(const struct fc_compile_worker *w)
{
    return w->started && getpid() != w->owner;
}

static int same_variant(const struct fc_variant *a, const struct fc_variant *b)
{
    return memcmp(a, b, sizeof *a) == 0;   /* plans memset variants: no stray padding bytes */
}

enum fc_compile_state fc_compile_worker_request(struct fc_compile_worker *w, const struct fc_variant *variant,
                                                int queue, struct fc_cubin *out, enum fc_status *status,
                                                char *msg, size_t msg_size)
{
    enum fc_compile_state state = FC_COMPILE_PENDING;
    if (forked(w))
        return FC_COMPILE_UNAVAILABLE;
    pthread_mutex_lock(&w->lock);
    struct fc_compile_job *job = w->jobs;
    while (job && !same_variant(&job->variant, variant))
        job = job->next;
    if (!job && !queue) {
        state = FC_COMPILE_UNKNOWN;
    } else if (!job) {
        job = calloc(1, sizeof *job);
        if (!job || (!w->started && start(w) != 0)) {
            free(job);
            pthread_mutex_unlock(&w->lock);
            return FC_COMPILE_UNAVAILABLE;
        }
        job->variant = *variant;
        job->state = JOB_QUEUED;
        job->next = w->jobs;
        w->jobs = job;
        pthread_cond_signal(&w->wake);
    } else if (job->state == JOB_DONE) {
        *out = job->cubin;   /* the bytes move to the caller */
        memset(&job->cubin, 0, sizeof job->cubin);
        job->state = JOB_TAKEN;
        state = FC_COMPILE_READY;
    } else if (job->state == JOB_FAILED) {
        *status = job->status;
        snprintf(msg, msg_size, "%s", job->message ? job->message : "the kernel's compile failed");
        state = FC_COMPILE_FAILED;
    } else if (job->state == JOB_TAKEN) {
        state = FC_COMPILE_TAKEN;
    }
    pthread_mutex_unlock(&w->lock);
    return state;
}

int fc_compile_worker_wait(struct fc_compile_worker *w)
{
    if (forked(w))
        return 0;
    pthread_mutex_lock(&w->lock);
    int failed;
    for (;;) {
        int busy = 0;
        failed = 0;
        for (struct fc_compile_job *j = w->jobs; j; j = j->next) {
            busy |= j->state == JOB_QUEUED || j->state == JOB_COMPILING;
            failed += j->state == JOB_FAILED;
        }
        if (!busy)
            break;
        pthread_cond_wait(&w->idle, &w->lock);
    }
    pthread_mutex_unlock(&w->lock);
    return failed;
}

/* Frees every job, storing the compiled ones nobody took first if `store`. */
static void free_jobs(struct fc_compile_worker *w, int store)
{
    for (struct fc_compile_job *j = w->jobs, *next; j; j = next) {
        next = j->next;
        if (store && j->state == JOB_DONE)   /* compiled, never loaded: kept for the next process */
            fc_jit_store(w->jit, &j->cubin);
        fc_cubin_free(&j->cubin);
        free(j->message);
        free(j);
    }
    w->jobs = NULL;
}

void fc_compile_worker_destroy(struct fc_compile_worker *w)
{
    if (!w->jit)
        return;   /* never initialized (a context that failed early) */
    if (forked(w)) {   /* the compiles are the parent's to finish and store; the locks may be held there */
        free_jobs(w, 0);
        memset(w, 0, sizeof *w);
        return;
    }
    pthread_mutex_lock(&w->lock);
    w->stopping = 1;
    pthread_cond_broadcast(&w->wake);
    pthread_mutex_unlock(&w->lock);
    if (w->started)
        pthread_join(w->thread, NULL);   /* after the compile under way, if one is */
    free_jobs(w, 1);
    pthread_cond_destroy(&w->idle);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
    w->jit = NULL;
}
