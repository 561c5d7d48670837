/* Compiled inner loops of rocketpipe.store.index_file.IndexFile.put_many (optional; the Python
 * code in index_file.py and index_hash.py is the reference and the fallback, and the unit tests
 * run both).
 *
 * put_entries(mm, batch, start, n, first, slot_num, entries_at, begin_ts, slot_blocks)
 *     -> (missing, touched, new_slots)
 *
 * For the keys batch[start:start + n] (KeyEntry tuples: key str, commit-log offset int, store
 * timestamp ms int), computes IndexFile.indexKeyHashMethod (abs(String.hashCode()) over UTF-16
 * code units, Integer.MIN_VALUE -> 0) and the slot (hash % slot_num). When a slot lies in a
 * 64 KiB slot block whose flag in `slot_blocks` is 0, nothing is written and `missing` lists
 * those blocks (the caller reserves their disk blocks and calls again). Otherwise writes the n
 * entries at positions first .. first + n - 1 (keyHash i32 | phyOffset i64 | timeDiff i32 |
 * prevIndex i32, big-endian, at entries_at + pos * 20): prevIndex is the newest earlier entry of
 * the slot in this batch, else the slot's value when it is a position below `first`, else 0
 * (that slot is new: `new_slots` counts them). timeDiff is (ts - begin_ts) / 1000 clamped to
 * 0 .. 2**31 - 1, or 0 when begin_ts <= 0. The slots are not written: `touched` holds, per slot
 * the batch used, (slot u32, newest position i32) native-endian, for put_slots, which the caller
 * runs after it has raised indexCount (readers treat a slot at or past indexCount as empty).
 * Errors: TypeError (an item that is not (str, int, int)), ValueError (a range outside `mm`),
 * OverflowError (an offset or timestamp beyond 64 bits), MemoryError.
 *
 * put_slots(mm, touched) -> None: writes each (slot, position) pair of `touched` big-endian at
 * 40 + slot * 4. ValueError: a slot outside `mm`.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HEADER_SIZE 40
#define INDEX_SIZE 20
#define SLOTS_PER_BLOCK_SHIFT 14 /* 64 KiB of 4-byte slots */
#define INT_MAX32 0x7FFFFFFFLL

static void put32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static uint32_t get32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

/* abs(String.hashCode()) of s; MIN_VALUE gives 0 */
static uint32_t index_key_hash(PyObject *s) {
    Py_ssize_t len = PyUnicode_GET_LENGTH(s);
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    uint32_t h = 0;
    if (kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *u = data;
        for (Py_ssize_t i = 0; i < len; i++) h = h * 31u + u[i];
    } else if (kind == PyUnicode_2BYTE_KIND) {
        const Py_UCS2 *u = data;
        for (Py_ssize_t i = 0; i < len; i++) h = h * 31u + u[i];
    } else {
        const Py_UCS4 *u = data;
        for (Py_ssize_t i = 0; i < len; i++) {
            Py_UCS4 c = u[i];
            if (c < 0x10000) {
                h = h * 31u + c;
            } else { /* a surrogate pair in Java's UTF-16 */
                c -= 0x10000;
                h = h * 31u + (0xD800u + (c >> 10));
                h = h * 31u + (0xDC00u + (c & 0x3FFu));
            }
        }
    }
    if (h < 0x80000000u) return h;
    return h == 0x80000000u ? 0 : (uint32_t)(0x100000000ULL - h);
}

/* open addressing: slot -> index into the batch of the newest entry using it */
typedef struct {
    uint32_t *slots;
    int32_t *newest; /* -1 = empty */
    size_t mask;
} touched_map;

static int map_init(touched_map *m, Py_ssize_t n) {
    size_t cap = 16;
    while (cap < (size_t)n * 2) cap <<= 1;
    m->slots = PyMem_Malloc(cap * sizeof(uint32_t));
    m->newest = PyMem_Malloc(cap * sizeof(int32_t));
    m->mask = cap - 1;
    if (m->slots == NULL || m->newest == NULL) {
        PyMem_Free(m->slots);
        PyMem_Free(m->newest);
        PyErr_NoMemory();
        return -1;
    }
    memset(m->newest, 0xFF, cap * sizeof(int32_t));
    return 0;
}

static void map_free(touched_map *m) {
    PyMem_Free(m->slots);
    PyMem_Free(m->newest);
}

/* the map cell of `slot` (empty, or holding it) */
static size_t map_cell(const touched_map *m, uint32_t slot) {
    size_t i = (slot * 2654435761u) & m->mask;
    while (m->newest[i] >= 0 && m->slots[i] != slot) i = (i + 1) & m->mask;
    return i;
}

static PyObject *put_entries(PyObject *self, PyObject *args) {
    Py_buffer mm, blocks;
    PyObject *batch, *result = NULL, *missing = NULL;
    Py_ssize_t start, n, entries_at;
    long long first, slot_num, begin_ts;
    uint32_t *hashes = NULL;
    unsigned char *listed = NULL; /* blocks already in `missing` */
    touched_map map = {NULL, NULL, 0};
    (void)self;
    if (!PyArg_ParseTuple(args, "w*O!nnLLnLw*", &mm, &PyList_Type, &batch, &start, &n, &first, &slot_num,
                          &entries_at, &begin_ts, &blocks)) {
        return NULL;
    }
    unsigned char *base = mm.buf;
    const unsigned char *reserved = blocks.buf;
    if (start < 0 || n < 0 || start + n > PyList_GET_SIZE(batch) || first < 1 || slot_num < 1 ||
        entries_at != HEADER_SIZE + slot_num * 4 || entries_at + (first + n) * INDEX_SIZE > mm.len ||
        ((slot_num - 1) >> SLOTS_PER_BLOCK_SHIFT) >= blocks.len || first + n > INT_MAX32) {
        PyErr_SetString(PyExc_ValueError, "put_entries: batch range, slots or entries outside the mapping");
        goto done;
    }
    hashes = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(uint32_t));
    listed = PyMem_Calloc((size_t)blocks.len + 1, 1);
    if (hashes == NULL || listed == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    missing = PyList_New(0);
    if (missing == NULL) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(batch, start + i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 3 || !PyUnicode_Check(PyTuple_GET_ITEM(item, 0))) {
            PyErr_SetString(PyExc_TypeError, "put_entries: every key must be a (str, int, int) tuple");
            goto done;
        }
        uint32_t h = index_key_hash(PyTuple_GET_ITEM(item, 0));
        hashes[i] = h;
        Py_ssize_t block = (Py_ssize_t)((h % (uint64_t)slot_num) >> SLOTS_PER_BLOCK_SHIFT);
        if (!reserved[block] && !listed[block]) {
            listed[block] = 1;
            PyObject *b = PyLong_FromSsize_t(block);
            int failed = b == NULL || PyList_Append(missing, b) < 0;
            Py_XDECREF(b);
            if (failed) goto done;
        }
    }
    if (PyList_GET_SIZE(missing) > 0) {
        result = Py_BuildValue("(OOi)", missing, Py_None, 0);
        goto done;
    }
    if (map_init(&map, n) < 0) goto done;
    long long new_slots = 0;
    Py_ssize_t distinct = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(batch, start + i);
        long long phy = PyLong_AsLongLong(PyTuple_GET_ITEM(item, 1));
        if (phy == -1 && PyErr_Occurred()) goto done;
        long long ts = PyLong_AsLongLong(PyTuple_GET_ITEM(item, 2));
        if (ts == -1 && PyErr_Occurred()) goto done;
        long long diff = 0;
        if (begin_ts > 0) {
            diff = ts - begin_ts;
            diff = diff < 0 ? 0 : diff / 1000;
            if (diff > INT_MAX32) diff = INT_MAX32;
        }
        uint32_t slot = (uint32_t)(hashes[i] % (uint64_t)slot_num);
        size_t cell = map_cell(&map, slot);
        long long pos = first + i, prev;
        if (map.newest[cell] >= 0) {
            prev = first + map.newest[cell];
        } else {
            prev = (int32_t)get32(base + HEADER_SIZE + (size_t)slot * 4);
            if (prev <= 0 || prev >= first) {
                prev = 0;
                new_slots++;
            }
            map.slots[cell] = slot;
            distinct++;
        }
        map.newest[cell] = (int32_t)i;
        unsigned char *e = base + entries_at + pos * INDEX_SIZE;
        put32(e, hashes[i]);
        put32(e + 4, (uint32_t)((uint64_t)phy >> 32));
        put32(e + 8, (uint32_t)phy);
        put32(e + 12, (uint32_t)diff);
        put32(e + 16, (uint32_t)prev);
    }
    PyObject *touched = PyBytes_FromStringAndSize(NULL, distinct * 8);
    if (touched == NULL) goto done;
    unsigned char *t = (unsigned char *)PyBytes_AS_STRING(touched);
    for (size_t c = 0; c <= map.mask; c++) {
        if (map.newest[c] < 0) continue;
        uint32_t slot = map.slots[c];
        int32_t p = (int32_t)(first + map.newest[c]);
        memcpy(t, &slot, 4);
        memcpy(t + 4, &p, 4);
        t += 8;
    }
    result = Py_BuildValue("(ONL)", missing, touched, new_slots);
done:
    Py_XDECREF(missing);
    PyMem_Free(hashes);
    PyMem_Free(listed);
    map_free(&map);
    PyBuffer_Release(&mm);
    PyBuffer_Release(&blocks);
    return result;
}

static PyObject *put_slots(PyObject *self, PyObject *args) {
    Py_buffer mm, touched;
    (void)self;
    if (!PyArg_ParseTuple(args, "w*y*", &mm, &touched)) return NULL;
    const unsigned char *t = touched.buf;
    unsigned char *base = mm.buf;
    PyObject *result = NULL;
    for (Py_ssize_t at = 0; at + 8 <= touched.len; at += 8) {
        uint32_t slot;
        int32_t pos;
        memcpy(&slot, t + at, 4);
        memcpy(&pos, t + at + 4, 4);
        if (HEADER_SIZE + (Py_ssize_t)slot * 4 + 4 > mm.len) {
            PyErr_SetString(PyExc_ValueError, "put_slots: a slot outside the mapping");
            goto done;
        }
        put32(base + HEADER_SIZE + (size_t)slot * 4, (uint32_t)pos);
    }
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&mm);
    PyBuffer_Release(&touched);
    return result;
}

static PyMethodDef methods[] = {
    {"put_entries", put_entries, METH_VARARGS, "Hash and write a batch of key-index entries (see index_file)."},
    {"put_slots", put_slots, METH_VARARGS, "Point the touched hash slots at their newest entries."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_index_put", NULL, -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__index_put(void) { return PyModule_Create(&module); }
