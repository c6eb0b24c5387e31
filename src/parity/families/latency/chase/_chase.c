/* Native pointer chase for the CPU latency suite.
 *
 * A chain is a ring of slots in one buffer, each slot holding the address of the next; the
 * Python side writes the ring (parity.families.latency.chase). Every load depends on the one before,
 * so the hardware cannot overlap them and the time per step is the load-to-use latency.
 *
 *   chase(buffer, start, steps) -> end            one chain on the calling thread
 *   chase_threads(buffer, starts, steps) -> ends  one thread per chain, started together
 *
 * Offsets are byte offsets into the buffer. The GIL is released while chasing.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#define STEP p = *(void *const *)p;
#define STEP8 STEP STEP STEP STEP STEP STEP STEP STEP

static const char *walk(const char *p, Py_ssize_t steps)
{
    Py_ssize_t blocks = steps / 64, rest = steps % 64;
    while (blocks-- > 0) {
        STEP8 STEP8 STEP8 STEP8 STEP8 STEP8 STEP8 STEP8
    }
    while (rest-- > 0) {
        STEP
    }
    return p;
}

static int check_offset(Py_buffer *view, Py_ssize_t offset)
{
    if (offset < 0 || offset + (Py_ssize_t)sizeof(void *) > view->len ||
        offset % (Py_ssize_t)sizeof(void *) != 0) {
        PyErr_Format(PyExc_ValueError, "start offset %zd is outside the %zd-byte buffer or misaligned",
                     offset, view->len);
        return -1;
    }
    return 0;
}

static PyObject *chase(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t start, steps;
    const char *end;
    if (!PyArg_ParseTuple(args, "y*nn", &view, &start, &steps))
        return NULL;
    if (check_offset(&view, start) < 0 || steps < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "steps must be >= 0");
        PyBuffer_Release(&view);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    end = walk((const char *)view.buf + start, steps);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(end - (const char *)view.buf);
}

typedef struct {
    const char *start;
    const char *end;
    Py_ssize_t steps;
    atomic_int *go; /* 0: wait, 1: chase, -1: give up (a sibling thread failed to start) */
} job_t;

static void *run_job(void *arg)
{
    job_t *job = (job_t *)arg;
    int go;
    while ((go = atomic_load(job->go)) == 0)
        sched_yield();
    job->end = go > 0 ? walk(job->start, job->steps) : job->start;
    return NULL;
}

static PyObject *chase_threads(PyObject *self, PyObject *args)
{
    Py_buffer view;
    PyObject *starts, *seq, *result = NULL;
    Py_ssize_t steps, n, i, launched = 0;
    job_t *jobs = NULL;
    pthread_t *threads = NULL;
    atomic_int go = 0;

    if (!PyArg_ParseTuple(args, "y*On", &view, &starts, &steps))
        return NULL;
    seq = PySequence_Fast(starts, "starts must be a sequence of byte offsets");
    if (seq == NULL)
        goto done;
    n = PySequence_Fast_GET_SIZE(seq);
    if (n < 1 || steps < 0) {
        PyErr_SetString(PyExc_ValueError, "need at least one start and steps >= 0");
        goto done;
    }
    jobs = calloc((size_t)n, sizeof(job_t));
    threads = calloc((size_t)n, sizeof(pthread_t));
    if (jobs == NULL || threads == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (i = 0; i < n; i++) {
        Py_ssize_t offset = PyNumber_AsSsize_t(PySequence_Fast_GET_ITEM(seq, i), PyExc_OverflowError);
        if (PyErr_Occurred() || check_offset(&view, offset) < 0)
            goto done;
        jobs[i].start = (const char *)view.buf + offset;
        jobs[i].steps = steps;
        jobs[i].go = &go;
    }
    Py_BEGIN_ALLOW_THREADS
    for (launched = 0; launched < n; launched++)
        if (pthread_create(&threads[launched], NULL, run_job, &jobs[launched]) != 0)
            break;
    /* All threads wait on the flag, so they start chasing together. */
    atomic_store(&go, launched == n ? 1 : -1);
    for (i = 0; i < launched; i++)
        pthread_join(threads[i], NULL);
    Py_END_ALLOW_THREADS
    if (launched != n) {
        PyErr_Format(PyExc_OSError, "could start only %zd of %zd threads", launched, n);
        goto done;
    }
    result = PyTuple_New(n);
    if (result == NULL)
        goto done;
    for (i = 0; i < n; i++)
        PyTuple_SET_ITEM(result, i, PyLong_FromSsize_t(jobs[i].end - (const char *)view.buf));
done:
    free(jobs);
    free(threads);
    Py_XDECREF(seq);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"chase", chase, METH_VARARGS, "chase(buffer, start, steps) -> end offset"},
    {"chase_threads", chase_threads, METH_VARARGS, "chase_threads(buffer, starts, steps) -> end offsets"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_chase", "Native pointer chase.", -1, methods};

PyMODINIT_FUNC PyInit__chase(void) { return PyModule_Create(&module); }
