/* Logging: to the caller's callback, or to stderr, and only at or below the level asked for. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "log_internal.h"

enum fc_log_level fc_log_level_from_env(enum fc_log_level fallback)
{
    static const char *const NAMES[] = {"off", "error", "warn", "info", "debug"};
    const char *value = getenv("FC_LOG");
    if (!value || !*value)
        return fallback;
    for (int i = 0; i <= FC_LOG_DEBUG; i++)
        if (strcasecmp(value, NAMES[i]) == 0)
            return (enum fc_log_level)i;
    return fallback;
}

void fc_log(const struct fc_logger *logger, enum fc_log_level level, const char *format, ...)
{
    static const char *const PREFIX[] = {"", "error", "warn", "info", "debug"};
    if (!logger || level > logger->level || level == FC_LOG_OFF)
        return;
    char message[2048];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    if (logger->fn)
        logger->fn(logger->user, level, message);
    else
        fprintf(stderr, "flashcore %s: %s\n", PREFIX[level], message);
}
