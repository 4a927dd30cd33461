/* The kernel cache's file and folder before SQLite opens them: whether they may be trusted,
 * creating them private, and moving a damaged file aside.
 *
 * NOTE: a cubin from the cache is loaded onto the GPU, and its checksum (XXH3) only catches
 * accidents; so whoever can write the file, or the folder it is in (and could put a -wal file of
 * their own beside it), could run code as this user. Like ssh's StrictModes, a file or folder
 * that another user owns or that is writable by group or others is not loaded from. A file that
 * root owns and others cannot write is an admin's read-only system layer. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache_internal.h"

#define PRIVATE_FOLDER_MODE 0700
#define PRIVATE_FILE_MODE 0600
#define ROOT_UID 0

/* SQLite's files beside a database: its write-ahead log and the shared-memory index. */
static const char *const SIDECARS[] = {"-wal", "-shm"};

int fc_cache_make_folder(const char *path)
{
    char buffer[PATH_MAX];
    if (snprintf(buffer, sizeof buffer, "%s", path) >= (int)sizeof buffer) {
        errno = ENAMETOOLONG;
        return -1;
    }
    char *slash = strrchr(buffer, '/');
    if (!slash || slash == buffer)
        return 0;
    *slash = 0;
    for (char *p = buffer + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            if (mkdir(buffer, PRIVATE_FOLDER_MODE) && errno != EEXIST)
                return -1;
            *p = '/';
        }
    }
    return mkdir(buffer, PRIVATE_FOLDER_MODE) && errno != EEXIST ? -1 : 0;
}

int fc_cache_create_file(const char *path)
{
    /* SQLite gives the -wal and -shm files the mode of the database file: 0600 too. */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, PRIVATE_FILE_MODE);
    if (fd >= 0)
        return close(fd);
    return errno == EEXIST ? 0 : -1;
}

/* Whether one file or folder may be trusted; why gets the reason and the fix when not. */
static enum fc_cache_trust judge(const char *what, const char *path, const struct stat *st, char *why, size_t size)
{
    const uid_t me = geteuid();
    if (st->st_uid != me && st->st_uid != ROOT_UID) {
        snprintf(why, size, "%s %s is owned by uid %u, not by this user (uid %u) or root, so what it holds could be "
                 "anyone's code; fix: move it away, or set FC_TUNING_DB to a file of your own", what, path,
                 (unsigned)st->st_uid, (unsigned)me);
        return FC_TRUST_REFUSED;
    }
    if (st->st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(why, size, "%s %s is writable by %s (mode %04o), so another user could put code in it; fix: "
                 "chmod go-w %s, or set FC_TUNING_DB to a file in a private folder", what, path,
                 st->st_mode & S_IWOTH ? "others" : "its group", (unsigned)(st->st_mode & 07777), path);
        return FC_TRUST_REFUSED;
    }
    return st->st_uid == ROOT_UID && me != ROOT_UID ? FC_TRUST_SYSTEM_LAYER : FC_TRUST_OWN;
}

/* Judges the folder a path is in (resolved); a folder that is not there yet is judged when made. */
static enum fc_cache_trust judge_folder(const char *path, char *why, size_t size)
{
    char copy[PATH_MAX], folder[PATH_MAX];
    snprintf(copy, sizeof copy, "%s", path);
    struct stat st;
    if (!realpath(dirname(copy), folder) || stat(folder, &st) != 0)
        return FC_TRUST_OWN;   /* nothing to load from: opening it will say why */
    enum fc_cache_trust trust = judge("folder", folder, &st, why, size);
    return trust == FC_TRUST_SYSTEM_LAYER ? FC_TRUST_OWN : trust;   /* root's folder: the file decides */
}

enum fc_cache_trust fc_cache_file_trust(const char *path, char *why, size_t size)
{
    why[0] = 0;
    enum fc_cache_trust trust = judge_folder(path, why, size);
    char real[PATH_MAX];
    struct stat st;
    if (trust == FC_TRUST_REFUSED || !realpath(path, real) || stat(real, &st) != 0)
        return trust;   /* refused, or no file yet: it will be created private */
    if (strcmp(real, path) != 0 && (trust = judge_folder(real, why, size)) == FC_TRUST_REFUSED)
        return trust;   /* a link: where it leads must be safe too */
    return judge("file", path, &st, why, size);
}

int fc_cache_move_aside(const char *path, char *moved_to, size_t size)
{
    char stamp[32];
    const time_t now = time(NULL);
    struct tm utc;
    gmtime_r(&now, &utc);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
    char target[PATH_MAX];
    struct stat st;
    for (int attempt = 0;; attempt++) {   /* never over an earlier one moved aside in this second */
        int n = attempt ? snprintf(target, sizeof target, "%s.damaged-%s-%d", path, stamp, attempt)
                        : snprintf(target, sizeof target, "%s.damaged-%s", path, stamp);
        if (n < 0 || n >= (int)sizeof target - 8) {
            errno = ENAMETOOLONG;
            return -1;
        }
        if (lstat(target, &st) != 0 && errno == ENOENT)
            break;
    }
    if (rename(path, target) != 0)
        return -1;
    for (size_t i = 0; i < sizeof SIDECARS / sizeof SIDECARS[0]; i++) {
        char from[PATH_MAX + 8], to[PATH_MAX + 8];
        snprintf(from, sizeof from, "%s%s", path, SIDECARS[i]);
        snprintf(to, sizeof to, "%s%s", target, SIDECARS[i]);
        if (rename(from, to) != 0 && errno != ENOENT)
            return -1;
    }
    snprintf(moved_to, size, "%s", target);
    return 0;
}
