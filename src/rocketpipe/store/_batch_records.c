/* Compiled inner loop of rocketpipe.store.batch_encoder.encode_batch (optional; the pure-Python
 * loop in batch_encoder.py is the reference and the fallback, and the unit tests run both).
 *
 * encode(body, topic_part, mid, tail, wait_pair, magic, queue_id, queue_offset, physical_offset,
 *        next_id, tags_code, index_keys) -> (records, entries, keys, total) | None
 *
 * Walks a SEND_BATCH_MESSAGE body (per entry TOTALSIZE, MAGICCODE, BODYCRC, FLAG, BODYLENGTH,
 * BODY, PROPERTIESLENGTH, PROPERTIES; big-endian) and builds one commit-log record per entry, as
 * MessageExtEncoder.encode(MessageExtBatch) does: the fixed fields, the constant middle part
 * `mid` (sysflag .. prepared offset), BODYLENGTH, the body, `topic_part`, PROPERTIESLENGTH, the
 * entry's properties, a separator / UNIQ_KEY / WAIT when missing, then `tail`.
 * Errors: ValueError (malformed entry; the caller raises ProtocolError), UnicodeDecodeError
 * (properties not UTF-8), OverflowError (properties over 32767 bytes).
 * Returns None, before any work, when an entry holds a CLUSTER pair: the caller then encodes the
 * batch with the Python loop, which parses and re-serialises such
 * entries. The caller only uses it when `tail` names no UNIQ_KEY, TAGS or KEYS.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include <zlib.h>

static const char UNIQ[] = "UNIQ_KEY";
static const char WAIT[] = "WAIT";
static const char TAGS[] = "TAGS";
static const char KEYS[] = "KEYS";
static const char CLUSTER[] = "CLUSTER";

static int32_t be32(const unsigned char *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
}

static void put32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static void put64(unsigned char *p, uint64_t v) {
    put32(p, (uint32_t)(v >> 32));
    put32(p + 4, (uint32_t)v);
}

/* Start of the value of the last NAME\x01 pair in b[ps:pe] (the last pair wins, as
 * string2messageProperties); -1 when absent. *end: the value's end (next \x02 or pe). */
static Py_ssize_t find_value(const unsigned char *b, Py_ssize_t ps, Py_ssize_t pe, const char *name,
                             Py_ssize_t *end) {
    Py_ssize_t len = (Py_ssize_t)strlen(name);
    Py_ssize_t v = -1;
    for (Py_ssize_t i = pe - len - 2; i >= ps; i--) {
        if (b[i] == 2 && b[i + 1 + len] == 1 && memcmp(b + i + 1, name, (size_t)len) == 0) {
            v = i + len + 2;
            break;
        }
    }
    if (v < 0 && pe - ps >= len + 1 && b[ps + len] == 1 && memcmp(b + ps, name, (size_t)len) == 0) {
        v = ps + len + 1;
    }
    if (v >= 0) {
        const unsigned char *sep = memchr(b + v, 2, (size_t)(pe - v));
        *end = sep == NULL ? pe : (Py_ssize_t)(sep - b);
    }
    return v;
}

static int check_utf8(const unsigned char *p, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        if (p[i] & 0x80) {
            PyObject *s = PyUnicode_DecodeUTF8((const char *)p, n, "strict");
            if (s == NULL) return -1;
            Py_DECREF(s);
            return 0;
        }
    }
    return 0;
}

/* str of b[s:e], or None when empty; NULL on error */
static PyObject *text_or_none(const unsigned char *b, Py_ssize_t s, Py_ssize_t e) {
    if (s < 0 || e <= s) Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8((const char *)b + s, e - s, "strict");
}

/* 1 when an entry of the batch body b[0:n] holds a CLUSTER pair; the walk stops at the first
 * malformed entry (the encoding loop raises for it). Reads only the entry heads and properties. */
static int holds_cluster(const unsigned char *b, Py_ssize_t n) {
    Py_ssize_t pos = 0, end;
    while (n - pos >= 22) {
        int32_t size = be32(b + pos), blen = be32(b + pos + 16);
        if (size < 22 || size > n - pos || blen < 0 || (long long)20 + blen + 2 > size) return 0;
        Py_ssize_t ps = pos + 20 + blen;
        int16_t plen = (int16_t)(((unsigned)b[ps] << 8) | b[ps + 1]);
        if (plen < 0 || (long long)22 + blen + plen > size) return 0;
        if (find_value(b, ps + 2, ps + 2 + plen, CLUSTER, &end) >= 0) return 1;
        pos += size;
    }
    return 0;
}

static PyObject *encode(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer body, topic_part, mid, tail, wait_pair;
    int magic, queue_id, index_keys;
    long long qo, phys;
    PyObject *next_id, *tags_code, *wait_obj;
    if (!PyArg_ParseTuple(args, "y*y*y*y*OiiLLOOp", &body, &topic_part, &mid, &tail, &wait_obj, &magic, &queue_id,
                          &qo, &phys, &next_id, &tags_code, &index_keys))
        return NULL;
    int has_wait = wait_obj != Py_None;
    wait_pair.buf = NULL;
    wait_pair.len = 0;
    PyObject *records = NULL, *entries = NULL, *keys = NULL, *result = NULL;
    if (has_wait && PyObject_GetBuffer(wait_obj, &wait_pair, PyBUF_SIMPLE) < 0) goto done_buffers;
    records = PyList_New(0);
    entries = PyList_New(0);
    keys = PyList_New(0);
    if (records == NULL || entries == NULL || keys == NULL) goto fail;

    const unsigned char *b = body.buf;
    Py_ssize_t n = body.len, pos = 0;
    if (holds_cluster(b, n)) { /* such entries are parsed and re-serialised: the Python loop's */
        result = Py_NewRef(Py_None);
        goto fail;
    }
    long long phys0 = phys;
    Py_ssize_t fixed = 4 * 5 + 8 * 2 + mid.len + 4; /* through BODYLENGTH: 5 ints, 2 longs, mid, 1 int */
    while (pos < n) {
        if (n - pos < 20) {
            PyErr_SetString(PyExc_ValueError, "bad batch body: entry header truncated");
            goto fail;
        }
        int32_t size = be32(b + pos), flag = be32(b + pos + 12), blen = be32(b + pos + 16);
        if (size < 22 || size > n - pos || blen < 0 || (long long)20 + blen + 2 > size) {
            PyErr_SetString(PyExc_ValueError, "batch entry size out of range");
            goto fail;
        }
        Py_ssize_t bs = pos + 20, ps = bs + blen;
        int16_t plen = (int16_t)(((unsigned)b[ps] << 8) | b[ps + 1]);
        if (plen < 0 || (long long)22 + blen + plen > size) {
            PyErr_SetString(PyExc_ValueError, "batch entry properties out of range");
            goto fail;
        }
        ps += 2;
        Py_ssize_t pe = ps + plen;
        pos += size;
        if (check_utf8(b + ps, plen) < 0) goto fail;

        unsigned char extra[512];
        Py_ssize_t extra_len = 0;
        if (plen > 0 && b[pe - 1] != 2) extra[extra_len++] = 2;
        Py_ssize_t ue = 0, te = 0, ke = 0;
        Py_ssize_t us = find_value(b, ps, pe, UNIQ, &ue);
        PyObject *made_id = NULL; /* a broker-made UNIQ_KEY (str) */
        if (us < 0) {
            made_id = PyObject_CallNoArgs(next_id);
            if (made_id == NULL) goto fail;
            Py_ssize_t idlen;
            const char *id = PyUnicode_AsUTF8AndSize(made_id, &idlen);
            if (id == NULL || idlen > 400) {
                if (id != NULL) PyErr_SetString(PyExc_ValueError, "unique id too long");
                Py_DECREF(made_id);
                goto fail;
            }
            memcpy(extra + extra_len, "UNIQ_KEY\x01", 9);
            extra_len += 9;
            memcpy(extra + extra_len, id, (size_t)idlen);
            extra_len += idlen;
            extra[extra_len++] = 2;
        }
        if (has_wait) {
            Py_ssize_t we;
            if (find_value(b, ps, pe, WAIT, &we) < 0) {
                if (extra_len + wait_pair.len > (Py_ssize_t)sizeof(extra)) {
                    Py_XDECREF(made_id);
                    PyErr_SetString(PyExc_ValueError, "WAIT value too long");
                    goto fail;
                }
                memcpy(extra + extra_len, wait_pair.buf, (size_t)wait_pair.len);
                extra_len += wait_pair.len;
            }
        }
        Py_ssize_t out_len = plen + extra_len + tail.len;
        if (out_len > 32767) {
            Py_XDECREF(made_id);
            PyErr_Format(PyExc_OverflowError, "properties of %zd bytes exceed 32767", out_len);
            goto fail;
        }
        Py_ssize_t total = fixed + blen + topic_part.len + 2 + out_len;
        PyObject *rec = PyBytes_FromStringAndSize(NULL, total);
        if (rec == NULL) {
            Py_XDECREF(made_id);
            goto fail;
        }
        unsigned char *r = (unsigned char *)PyBytes_AS_STRING(rec);
        uint32_t crc = (uint32_t)crc32(0L, b + bs, (uInt)blen) & 0x7FFFFFFFu;
        put32(r, (uint32_t)total);
        put32(r + 4, (uint32_t)magic);
        put32(r + 8, crc);
        put32(r + 12, (uint32_t)queue_id);
        put32(r + 16, (uint32_t)flag);
        put64(r + 20, (uint64_t)qo);
        put64(r + 28, (uint64_t)phys);
        unsigned char *w = r + 36;
        memcpy(w, mid.buf, (size_t)mid.len);
        w += mid.len;
        put32(w, (uint32_t)blen);
        w += 4;
        memcpy(w, b + bs, (size_t)blen);
        w += blen;
        memcpy(w, topic_part.buf, (size_t)topic_part.len);
        w += topic_part.len;
        w[0] = (unsigned char)(out_len >> 8);
        w[1] = (unsigned char)out_len;
        w += 2;
        memcpy(w, b + ps, (size_t)plen);
        w += plen;
        memcpy(w, extra, (size_t)extra_len);
        w += extra_len;
        memcpy(w, tail.buf, (size_t)tail.len);
        if (PyList_Append(records, rec) < 0) {
            Py_DECREF(rec);
            Py_XDECREF(made_id);
            goto fail;
        }
        Py_DECREF(rec);

        long long code = 0;
        Py_ssize_t ts = find_value(b, ps, pe, TAGS, &te);
        if (ts >= 0 && te > ts) {
            PyObject *tb = PyBytes_FromStringAndSize((const char *)b + ts, te - ts);
            PyObject *c = tb == NULL ? NULL : PyObject_CallOneArg(tags_code, tb);
            Py_XDECREF(tb);
            if (c == NULL) {
                Py_XDECREF(made_id);
                goto fail;
            }
            code = PyLong_AsLongLong(c);
            Py_DECREF(c);
            if (code == -1 && PyErr_Occurred()) {
                Py_XDECREF(made_id);
                goto fail;
            }
        }
        PyObject *entry = Py_BuildValue("(LnL)", phys, total, code);
        if (entry == NULL || PyList_Append(entries, entry) < 0) {
            Py_XDECREF(entry);
            Py_XDECREF(made_id);
            goto fail;
        }
        Py_DECREF(entry);
        if (index_keys) {
            PyObject *u;
            if (made_id != NULL) {
                u = made_id;
                made_id = NULL;
            } else {
                u = text_or_none(b, us, ue);
            }
            Py_ssize_t ks = find_value(b, ps, pe, KEYS, &ke);
            PyObject *k = u == NULL ? NULL : text_or_none(b, ks, ke);
            PyObject *pair = k == NULL ? NULL : PyTuple_Pack(2, u, k);
            Py_XDECREF(u);
            Py_XDECREF(k);
            if (pair == NULL || PyList_Append(keys, pair) < 0) {
                Py_XDECREF(pair);
                goto fail;
            }
            Py_DECREF(pair);
        }
        Py_XDECREF(made_id);
        phys += total;
        qo += 1;
    }
    result = Py_BuildValue("(OOOL)", records, entries, keys, phys - phys0);
fail:
    Py_XDECREF(records);
    Py_XDECREF(entries);
    Py_XDECREF(keys);
    if (has_wait && wait_pair.buf != NULL) PyBuffer_Release(&wait_pair);
done_buffers:
    PyBuffer_Release(&body);
    PyBuffer_Release(&topic_part);
    PyBuffer_Release(&mid);
    PyBuffer_Release(&tail);
    return result;
}

static PyMethodDef methods[] = {
    {"encode", encode, METH_VARARGS, "Encode a batch body's entries as commit-log records (see batch_encoder)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_batch_records", NULL, -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__batch_records(void) { return PyModule_Create(&module); }
