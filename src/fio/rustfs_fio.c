/*
 * An fio external ioengine over librustfs (include/rustfs/rustfs.h): fio
 * drives the native client in its own process, with the same job files as
 * a run on the FUSE mount:
 *
 *   fio --ioengine=external:build/src/librustfs_fio.so \
 *       --rustfs_config=DIR/rustfs.toml --filename=/data.bin ...
 *
 * filename is a path inside rustfs (from its root). Engine options (after
 * --ioengine on the command line): rustfs_config (else $RUSTFS_CONFIG, else
 * librustfs's default), rustfs_threads (submitter threads, default 4),
 * rustfs_stats (append this job's client counters, one JSON line, at exit).
 *
 * Reads are asynchronous: .queue holds them, .commit hands everything held
 * to a submitter thread pool, and a submitter that comes free takes ALL that
 * is waiting (up to its share of iodepth) as one rustfs_read_batch_files, so every
 * DSS gets one BatchRead for the lot: fio's default of one commit per I/O
 * still ends up as scatter-gather batches, and iodepth reads stay in flight.
 * Writes and syncs complete in .queue: the client buffers writes in memory,
 * so a write costs a copy (and, when a chunk fills, its publication).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fio.h"
#include "optgroup.h"

#include "rustfs/rustfs.h"

struct rfs_options {
  void* pad; /* fio reads an off1 of 0 as "no option": keep real ones off 0 */
  char* config;
  unsigned int threads;
  char* stats;
};

static struct fio_option options[] = {
    {
        .name = "rustfs_config",
        .lname = "rustfs config file",
        .type = FIO_OPT_STR_STORE,
        .off1 = offsetof(struct rfs_options, config),
        .help = "rustfs config file (DIR/rustfs.toml); default $RUSTFS_CONFIG, else "
                "/etc/rustfs/random-read.toml",
        .category = FIO_OPT_C_ENGINE,
        .group = FIO_OPT_G_INVALID,
    },
    {
        .name = "rustfs_threads",
        .lname = "rustfs submitter threads",
        .type = FIO_OPT_INT,
        .off1 = offsetof(struct rfs_options, threads),
        .def = "4",
        .minval = 1,
        .maxval = 256,
        .help = "threads issuing read batches (batches in flight per job)",
        .category = FIO_OPT_C_ENGINE,
        .group = FIO_OPT_G_INVALID,
    },
    {
        .name = "rustfs_stats",
        .lname = "rustfs counters file",
        .type = FIO_OPT_STR_STORE,
        .off1 = offsetof(struct rfs_options, stats),
        .help = "append the job's rustfs client counters (a JSON line) to this file at exit",
        .category = FIO_OPT_C_ENGINE,
        .group = FIO_OPT_G_INVALID,
    },
    {
        .name = NULL,
    },
};

/* Per job (td->io_ops_data). Every queue below holds at most iodepth io_us. */
struct rfs_data {
  rustfs_client* client;
  unsigned int depth;

  struct io_u** held; /* queued, not yet committed: the job thread's alone */
  unsigned int nheld;

  pthread_mutex_t mu; /* guards the rest */
  pthread_cond_t work_cv;
  pthread_cond_t done_cv;
  struct io_u** waiting; /* committed, not yet taken by a submitter */
  unsigned int nwaiting;
  struct io_u** done; /* completed, not yet reaped by getevents */
  unsigned int ndone;
  bool stop;
  bool error_logged; /* the first failed batch's cause is logged, once */

  struct io_u** events; /* the last getevents' io_us, read back by .event */

  pthread_t* threads;
  unsigned int nthreads;
  unsigned int batch_max; /* a submitter's share of iodepth */
};

static const char* config_path(struct thread_data* td) {
  struct rfs_options* o = td->eo;
  if (o->config && o->config[0]) return o->config;
  return getenv("RUSTFS_CONFIG"); /* NULL: librustfs's default resolution */
}

static int rfs_connect(struct thread_data* td, rustfs_client** out) {
  int r = rustfs_connect(config_path(td), out);
  if (r < 0) {
    log_err("rustfs: connect (config %s): %s\n", config_path(td) ? config_path(td) : "default",
            rustfs_last_error());
    td_verror(td, -r, "rustfs_connect");
  }
  return r;
}

/*
 * fio sets up files (sizes, layout) in its main process before it forks the
 * jobs, where .init has not run and a client must not be kept (it would not
 * survive the fork). There, each setup call connects for its own duration.
 */
static int setup_client(struct thread_data* td, rustfs_client** c, bool* temporary) {
  struct rfs_data* d = td->io_ops_data;
  *temporary = !(d && d->client);
  if (!*temporary) {
    *c = d->client;
    return 0;
  }
  return rfs_connect(td, c);
}

static void setup_client_done(rustfs_client* c, bool temporary) {
  if (temporary) rustfs_disconnect(c);
}

/* mkdir -p of the directory holding path, as fio does for local files. */
static int make_parents(rustfs_client* c, const char* path) {
  char* p = strdup(path);
  int r = p ? 0 : -ENOMEM;
  for (char* s = p ? strchr(p + 1, '/') : NULL; s && r == 0; s = strchr(s + 1, '/')) {
    *s = '\0';
    r = rustfs_mkdir(c, p, 0755);
    if (r == -EEXIST) r = 0;
    *s = '/';
  }
  free(p);
  return r;
}

/*
 * Creates the directories of the job's files and learns their sizes (0 if
 * missing: .prepopulate_file lays them out).
 */
static int rfs_setup(struct thread_data* td) {
  rustfs_client* c;
  bool temporary;
  struct fio_file* f;
  unsigned int i;
  int r = setup_client(td, &c, &temporary);
  if (r < 0) return 1;
  for_each_file(td, f, i) {
    rustfs_file* h;
    f->real_file_size = 0;
    r = make_parents(c, f->file_name);
    if (r < 0) {
      log_err("rustfs: creating the directories of %s: %s\n", f->file_name, rustfs_last_error());
      td_verror(td, -r, "rustfs_mkdir");
      break;
    }
    r = rustfs_open(c, f->file_name, O_RDONLY, 0, &h);
    if (r == 0) {
      int64_t size = rustfs_size(h);
      rustfs_close(h);
      if (size < 0) r = (int)size;
      else f->real_file_size = size;
    }
    if (r < 0 && r != -ENOENT) {
      log_err("rustfs: %s: %s\n", f->file_name, rustfs_last_error());
      td_verror(td, -r, "rustfs_size");
      break;
    }
    r = 0;
    fio_file_set_size_known(f);
  }
  setup_client_done(c, temporary);
  return r ? 1 : 0;
}

/*
 * What fio's own layout does for files on a local file system: a job that
 * reads needs its range to exist, so the missing tail is written (with
 * fio's buffer contents, as fio would). Existing bytes are kept.
 */
static int rfs_prepopulate_file(struct thread_data* td, struct fio_file* f) {
  const uint64_t end = f->file_offset + f->io_size;
  const uint64_t step = 1 << 20;
  rustfs_client* c;
  rustfs_file* h;
  bool temporary;
  char* buf;
  uint64_t off;
  int r;

  if (f->real_file_size >= end) return 0;
  if (!td_read(td)) { /* writes create the file at open and extend it */
    f->real_file_size = end;
    return 0;
  }
  if (setup_client(td, &c, &temporary) < 0) return 1;
  buf = malloc(step);
  r = buf ? rustfs_open(c, f->file_name, O_WRONLY | O_CREAT, 0644, &h) : -ENOMEM;
  if (r == 0) {
    for (off = f->real_file_size; off < end && r >= 0 && !td->terminate; off += step) {
      size_t n = end - off < step ? end - off : step;
      fill_io_buffer(td, buf, n, n);
      r = (int)rustfs_pwrite(h, buf, n, off);
    }
    int cr = rustfs_close(h); /* publishes the buffered tail */
    if (r >= 0) r = cr;
  }
  if (r < 0) {
    log_err("rustfs: laying out %s: %s\n", f->file_name, rustfs_last_error());
    td_verror(td, -r, "rustfs layout");
  } else {
    f->real_file_size = end;
  }
  free(buf);
  setup_client_done(c, temporary);
  return r < 0 ? 1 : 0;
}

static void complete_read(struct io_u* io_u, ssize_t result) {
  if (result < 0) {
    io_u->error = (int)-result;
  } else {
    io_u->resid = io_u->xfer_buflen - (unsigned long long)result; /* short at EOF */
  }
}

/* A submitter: takes what is waiting, reads it as one batch, whatever files
 * it spans (a job may have several: nrfiles). */
static void* submitter(void* arg) {
  struct rfs_data* d = arg;
  struct io_u** batch = calloc(d->batch_max, sizeof *batch);
  struct rustfs_read_req* reqs = calloc(d->batch_max, sizeof *reqs);
  rustfs_file** files = calloc(d->batch_max, sizeof *files);
  if (!batch || !reqs || !files) abort(); /* a handful of pointers; nothing to recover */

  pthread_mutex_lock(&d->mu);
  for (;;) {
    while (!d->nwaiting && !d->stop) pthread_cond_wait(&d->work_cv, &d->mu);
    if (!d->nwaiting) break; /* stopping, and nothing left to do */
    unsigned int n = d->nwaiting < d->batch_max ? d->nwaiting : d->batch_max;
    memcpy(batch, d->waiting, n * sizeof *batch);
    d->nwaiting -= n;
    memmove(d->waiting, d->waiting + n, d->nwaiting * sizeof *d->waiting);
    if (d->nwaiting) pthread_cond_signal(&d->work_cv); /* more for another submitter */
    pthread_mutex_unlock(&d->mu);

    for (unsigned int i = 0; i < n; i++) {
      files[i] = FILE_ENG_DATA(batch[i]->file);
      reqs[i].offset = batch[i]->offset;
      reqs[i].length = batch[i]->xfer_buflen;
      reqs[i].buf = batch[i]->xfer_buf;
      reqs[i].result = 0;
    }
    /* fio reports each failed read's errno; the words are only here. */
    if (rustfs_read_batch_files(files, reqs, n) < 0 &&
        !__atomic_exchange_n(&d->error_logged, true, __ATOMIC_RELAXED))
      log_err("rustfs: read failed: %s\n", rustfs_last_error());
    for (unsigned int i = 0; i < n; i++) complete_read(batch[i], reqs[i].result);

    pthread_mutex_lock(&d->mu);
    memcpy(d->done + d->ndone, batch, n * sizeof *batch);
    d->ndone += n;
    pthread_cond_signal(&d->done_cv);
  }
  pthread_mutex_unlock(&d->mu);
  free(batch);
  free(reqs);
  free(files);
  return NULL;
}

static void rfs_cleanup(struct thread_data* td);

/* Runs in the job (after fio's fork): the job's own client and submitters. */
static int rfs_init(struct thread_data* td) {
  struct rfs_options* o = td->eo;
  struct rfs_data* d = calloc(1, sizeof *d);
  if (!d) return 1;
  td->io_ops_data = d;
  d->depth = td->o.iodepth ? td->o.iodepth : 1;
  d->held = calloc(d->depth, sizeof *d->held);
  d->waiting = calloc(d->depth, sizeof *d->waiting);
  d->done = calloc(d->depth, sizeof *d->done);
  d->events = calloc(d->depth, sizeof *d->events);
  pthread_mutex_init(&d->mu, NULL);
  pthread_cond_init(&d->work_cv, NULL);
  pthread_cond_init(&d->done_cv, NULL);
  if (!d->held || !d->waiting || !d->done || !d->events) goto fail;
  if (rfs_connect(td, &d->client) < 0) goto fail;

  /* At iodepth 1 a read is served in .queue: a hand-off would only add latency. */
  if (d->depth > 1) {
    unsigned int want = o->threads < d->depth ? o->threads : d->depth;
    d->batch_max = (d->depth + want - 1) / want;
    d->threads = calloc(want, sizeof *d->threads);
    if (!d->threads) goto fail;
    for (; d->nthreads < want; d->nthreads++) {
      if (pthread_create(&d->threads[d->nthreads], NULL, submitter, d) != 0) {
        td_verror(td, errno ? errno : EAGAIN, "pthread_create");
        goto fail;
      }
    }
  }
  return 0;
fail:
  rfs_cleanup(td);
  return 1;
}

static void write_stats(struct thread_data* td, struct rfs_data* d) {
  struct rfs_options* o = td->eo;
  if (!o->stats || !o->stats[0] || !d->client) return;
  int n = rustfs_stats_json(d->client, NULL, 0);
  char* json = n >= 0 ? malloc((size_t)n + 2) : NULL;
  if (!json) return;
  rustfs_stats_json(d->client, json, (size_t)n + 1);
  json[n] = '\n';
  /* One write of the whole line: jobs appending at once do not interleave. */
  int fd = open(o->stats, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0 || write(fd, json, (size_t)n + 1) != n + 1)
    log_err("rustfs: cannot write counters to %s: %s\n", o->stats, strerror(errno));
  if (fd >= 0) close(fd);
  free(json);
}

static void rfs_cleanup(struct thread_data* td) {
  struct rfs_data* d = td->io_ops_data;
  if (!d) return;
  /* fio has reaped every I/O by now; submitters drain anything left anyway. */
  pthread_mutex_lock(&d->mu);
  d->stop = true;
  pthread_cond_broadcast(&d->work_cv);
  pthread_mutex_unlock(&d->mu);
  for (unsigned int i = 0; i < d->nthreads; i++) pthread_join(d->threads[i], NULL);
  write_stats(td, d);
  rustfs_disconnect(d->client);
  pthread_cond_destroy(&d->done_cv);
  pthread_cond_destroy(&d->work_cv);
  pthread_mutex_destroy(&d->mu);
  free(d->threads);
  free(d->events);
  free(d->done);
  free(d->waiting);
  free(d->held);
  free(d);
  td->io_ops_data = NULL;
}

static int rfs_open_file(struct thread_data* td, struct fio_file* f) {
  struct rfs_data* d = td->io_ops_data;
  rustfs_file* h;
  int flags = td_write(td) ? O_RDWR | O_CREAT : O_RDONLY;
  int r = rustfs_open(d->client, f->file_name, flags, 0644, &h);
  if (r < 0) {
    log_err("rustfs: open %s: %s\n", f->file_name, rustfs_last_error());
    td_verror(td, -r, "rustfs_open");
    return 1;
  }
  FILE_SET_ENG_DATA(f, h);
  /*
   * fio skips both of these for a diskless engine; on a local file it does
   * them at every open (invalidate=1 and fadvise_hint=1 by default), so the
   * native path starts as cold and as hinted as a kernel file would.
   */
  if (td->o.invalidate_cache) rustfs_fadvise(h, f->file_offset, f->io_size, POSIX_FADV_DONTNEED);
  if (td->o.fadvise_hint != F_ADV_NONE) {
    int advice = td->o.fadvise_hint == F_ADV_RANDOM       ? POSIX_FADV_RANDOM
                 : td->o.fadvise_hint == F_ADV_SEQUENTIAL ? POSIX_FADV_SEQUENTIAL
                 : td_random(td)                          ? POSIX_FADV_RANDOM
                                                          : POSIX_FADV_SEQUENTIAL;
    rustfs_fadvise(h, f->file_offset, f->io_size, advice);
  }
  return 0;
}

static int rfs_close_file(struct thread_data* td, struct fio_file* f) {
  rustfs_file* h = FILE_ENG_DATA(f);
  FILE_SET_ENG_DATA(f, NULL);
  int r = h ? rustfs_close(h) : 0; /* publishes buffered writes */
  if (r < 0) {
    log_err("rustfs: close %s: %s\n", f->file_name, rustfs_last_error());
    return -r;
  }
  return 0;
}

static int rfs_invalidate(struct thread_data* td, struct fio_file* f) {
  rustfs_file* h = FILE_ENG_DATA(f);
  /* Not open (fio's main process, after layout): no cache holds the file. */
  return h ? rustfs_fadvise(h, f->file_offset, f->io_size, POSIX_FADV_DONTNEED) : 0;
}

static int rfs_unlink_file(struct thread_data* td, struct fio_file* f) {
  rustfs_client* c;
  bool temporary;
  if (setup_client(td, &c, &temporary) < 0) return td->error ? td->error : EIO;
  int r = rustfs_unlink(c, f->file_name);
  setup_client_done(c, temporary);
  return r == -ENOENT ? 0 : -r; /* fio wants a positive errno */
}

static enum fio_q_status rfs_queue(struct thread_data* td, struct io_u* io_u) {
  struct rfs_data* d = td->io_ops_data;
  rustfs_file* h = FILE_ENG_DATA(io_u->file);
  ssize_t r;

  fio_ro_check(td, io_u);
  if (io_u->ddir == DDIR_READ && d->nthreads) {
    d->held[d->nheld++] = io_u; /* issue time set at commit */
    return FIO_Q_QUEUED;
  }
  /* Completed here: FIO_ASYNCIO_SETS_ISSUE_TIME leaves its issue time to us. */
  if (fio_fill_issue_time(td)) fio_gettime(&io_u->issue_time, NULL);
  switch (io_u->ddir) {
    case DDIR_READ:
      complete_read(io_u, rustfs_pread(h, io_u->xfer_buf, io_u->xfer_buflen, io_u->offset));
      return FIO_Q_COMPLETED;
    case DDIR_WRITE:
      r = rustfs_pwrite(h, io_u->xfer_buf, io_u->xfer_buflen, io_u->offset);
      if (r < 0) io_u->error = (int)-r;
      return FIO_Q_COMPLETED;
    case DDIR_SYNC:
    case DDIR_DATASYNC:
      r = rustfs_fsync(h);
      if (r < 0) io_u->error = (int)-r;
      return FIO_Q_COMPLETED;
    default:
      io_u->error = EOPNOTSUPP; /* trim */
      return FIO_Q_COMPLETED;
  }
}

static int rfs_commit(struct thread_data* td) {
  struct rfs_data* d = td->io_ops_data;
  struct timespec now;
  if (!d->nheld) return 0;
  /* Submission time is now, as fio's own async engines record it. */
  if (fio_fill_issue_time(td)) {
    fio_gettime(&now, NULL);
    for (unsigned int i = 0; i < d->nheld; i++) {
      memcpy(&d->held[i]->issue_time, &now, sizeof now);
      io_u_queued(td, d->held[i]);
    }
  }
  pthread_mutex_lock(&d->mu);
  memcpy(d->waiting + d->nwaiting, d->held, d->nheld * sizeof *d->held);
  d->nwaiting += d->nheld;
  pthread_cond_signal(&d->work_cv);
  pthread_mutex_unlock(&d->mu);
  io_u_mark_submit(td, d->nheld);
  d->nheld = 0;
  return 0;
}

static int rfs_getevents(struct thread_data* td, unsigned int min, unsigned int max,
                         const struct timespec* t) {
  struct rfs_data* d = td->io_ops_data;
  struct timespec deadline;
  unsigned int n;
  if (t) {
    clock_gettime(CLOCK_REALTIME, &deadline); /* pthread_cond_timedwait's clock */
    deadline.tv_sec += t->tv_sec;
    deadline.tv_nsec += t->tv_nsec;
    if (deadline.tv_nsec >= 1000000000L) deadline.tv_sec++, deadline.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&d->mu);
  while (d->ndone < min) {
    if (!t) pthread_cond_wait(&d->done_cv, &d->mu);
    else if (pthread_cond_timedwait(&d->done_cv, &d->mu, &deadline) == ETIMEDOUT) break;
  }
  n = d->ndone < max ? d->ndone : max;
  memcpy(d->events, d->done, n * sizeof *d->events);
  d->ndone -= n;
  memmove(d->done, d->done + n, d->ndone * sizeof *d->done);
  pthread_mutex_unlock(&d->mu);
  return (int)n;
}

static struct io_u* rfs_event(struct thread_data* td, int event) {
  struct rfs_data* d = td->io_ops_data;
  return d->events[event];
}

static struct ioengine_ops ioengine = {
    .name = "rustfs",
    .version = FIO_IOOPS_VERSION,
    /* No local files: fio must not stat, create or lay out filename itself. */
    .flags = FIO_DISKLESSIO | FIO_NODISKUTIL | FIO_ASYNCIO_SETS_ISSUE_TIME,
    .setup = rfs_setup,
    .init = rfs_init,
    .cleanup = rfs_cleanup,
    .queue = rfs_queue,
    .commit = rfs_commit,
    .getevents = rfs_getevents,
    .event = rfs_event,
    .open_file = rfs_open_file,
    .close_file = rfs_close_file,
    .invalidate = rfs_invalidate,
    .unlink_file = rfs_unlink_file,
    .prepopulate_file = rfs_prepopulate_file,
    .options = options,
    .option_struct_size = sizeof(struct rfs_options),
};

/* What fio looks up in an external engine (ioengine=external:PATH). */
__attribute__((visibility("default"))) void get_ioengine(struct ioengine_ops** ops) {
  *ops = &ioengine;
}
