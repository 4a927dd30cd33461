/* Internal: logging. Nothing is printed unless a level is asked for. */
#ifndef FC_LOG_INTERNAL_H
#define FC_LOG_INTERNAL_H

#include "flashcore.h"

struct fc_logger {
    enum fc_log_level level;
    fc_log_fn fn;        /* NULL: stderr */
    void *user;
};

/** Level from $FC_LOG (off|error|warn|info|debug); fallback when unset or unknown. */
enum fc_log_level fc_log_level_from_env(enum fc_log_level fallback);

void fc_log(const struct fc_logger *logger, enum fc_log_level level, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

#endif
