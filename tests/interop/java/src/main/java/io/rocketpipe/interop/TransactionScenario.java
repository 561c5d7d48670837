package io.rocketpipe.interop;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * TransactionMQProducer + TransactionListener against a name server (client 5.x and 4.9.x).
 * Args: namesrv topic group mode count timeoutSeconds.
 *
 * <p>Message i has body "tx-MODE-i", tags "Tag" + (i % 3), keys "key-i tx", user properties
 * mode=MODE, idx=i, "ünï"="çødé". The marker message (rollback and unknown-then-check) has body
 * "marker", keys "marker", idx=-1, marker=1: its local transaction is UNKNOW and its check
 * answers COMMIT_MESSAGE, so once the marker is visible on the topic the broker has run a check
 * round after every earlier END_TRANSACTION of the run.
 *
 * <ul>
 *   <li>commit: executeLocalTransaction returns COMMIT_MESSAGE;</li>
 *   <li>rollback: ROLLBACK_MESSAGE, then the marker (waits until it was checked);</li>
 *   <li>unknown-then-check: UNKNOW; checkLocalTransaction answers COMMIT_MESSAGE for even idx,
 *       ROLLBACK_MESSAGE for odd ones; waits until every message was checked at least once, then
 *       sends the marker and waits until it was checked;</li>
 *   <li>crash: count half messages sent from count threads, each executeLocalTransaction blocks
 *       (as does any check): once the broker acknowledged every half message (the client calls
 *       executeLocalTransaction only after SEND_OK), prints the result and Runtime.halt(0)s — no
 *       END_TRANSACTION is ever sent;</li>
 *   <li>check-only: sends nothing; a producer of the group that answers every check with
 *       COMMIT_MESSAGE until count distinct messages were checked (or timeout).</li>
 * </ul>
 *
 * <p>Check callbacks run on an executor of this class (setExecutorService): before the producer is
 * shut down that executor is drained, so the END_TRANSACTION (oneway) of every answered check has
 * been written. Prints one JSON line: sends (status, msgId, offsetMsgId, transactionId, local
 * state, queue), executed (what executeLocalTransaction saw and returned), checks (every check
 * callback: msg id, transaction id, topic, queue, properties, answer, ms since the send), checkCounts
 * (msg id -> number of checks).
 */
public final class TransactionScenario {
    static final String MARKER = "marker";

    public static void main(String[] args) throws Exception {
        String ns = args[0];
        String topic = args[1];
        String group = args[2];
        String mode = args[3];
        int n = Integer.parseInt(args[4]);
        long timeoutMs = Long.parseLong(args[5]) * 1000L;

        Listener listener = new Listener(mode, n);
        ThreadPoolExecutor checkExecutor = new ThreadPoolExecutor(
            2, 2, 60, TimeUnit.SECONDS, new LinkedBlockingQueue<>(2000), r -> {
                Thread t = new Thread(r, "tx-check");
                t.setDaemon(true);
                return t;
            });
        TransactionMQProducer p = new TransactionMQProducer(group);
        p.setNamesrvAddr(ns);
        p.setInstanceName("interop-tx-" + System.nanoTime());
        p.setSendMsgTimeout(10000);
        p.setVipChannelEnabled(false);
        p.setHeartbeatBrokerInterval(1000);  // a check-only producer must be known to the broker soon
        p.setTransactionListener(listener);
        p.setExecutorService(checkExecutor);
        p.start();

        Map<String, Object> out = Json.obj();
        out.put("mode", mode);
        long t0 = System.currentTimeMillis();
        try {
            switch (mode) {
                case "commit":
                    out.put("sends", sendAll(p, topic, mode, n));
                    break;
                case "rollback":
                    out.put("sends", sendAll(p, topic, mode, n));
                    out.put("marker", sendMarker(p, topic, listener, timeoutMs, out));
                    break;
                case "unknown-then-check":
                    List<Object> sends = sendAll(p, topic, mode, n);
                    out.put("sends", sends);
                    out.put("allChecked", listener.awaitChecked(n, false, timeoutMs));
                    out.put("marker", sendMarker(p, topic, listener, timeoutMs, out));
                    break;
                case "crash":
                    crash(p, topic, n, listener, timeoutMs, out);
                    break;  // not reached when every half message was acknowledged
                case "check-only":
                    // a producer that never sends has no broker connection: learn the topic's
                    // route (the client instance's broker table) and send the heartbeat that
                    // registers the group's channel with the broker, which then checks us
                    MQClientInstance factory = p.getDefaultMQProducerImpl().getMqClientFactory();
                    out.put("routeUpdated", factory.updateTopicRouteInfoFromNameServer(topic));
                    factory.sendHeartbeatToAllBrokerWithLock();
                    out.put("allChecked", listener.awaitChecked(n, false, timeoutMs));
                    break;
                default:
                    throw new IllegalArgumentException("unknown mode " + mode);
            }
            out.put("ok", true);
        } catch (Exception e) {
            out.put("ok", false);
            out.put("error", Json.error(e));
        }
        // every answered check has sent its END_TRANSACTION before the producer goes away
        checkExecutor.shutdown();
        out.put("checkExecutorDrained", checkExecutor.awaitTermination(10, TimeUnit.SECONDS));
        p.shutdown();
        out.put("elapsedMs", System.currentTimeMillis() - t0);
        listener.putResult(out);
        Json.print(out);
        System.exit(0);  // do not depend on the client's executors all being shut down
    }

    static Message msg(String topic, String mode, int i) {
        Message m = new Message(topic, "Tag" + (i % 3), "key-" + i + " tx", ("tx-" + mode + "-" + i).getBytes(StandardCharsets.UTF_8));
        m.putUserProperty("mode", mode);
        m.putUserProperty("idx", Integer.toString(i));
        m.putUserProperty("\u00fcn\u00ef", "\u00e7\u00f8d\u00e9");
        return m;
    }

    static List<Object> sendAll(TransactionMQProducer p, String topic, String mode, int n) throws Exception {
        List<Object> sends = Json.list();
        for (int i = 0; i < n; i++) {
            sends.add(result(p.sendMessageInTransaction(msg(topic, mode, i), null), i));
        }
        return sends;
    }

    /** Sends the marker (UNKNOW, committed by its check) and waits until it was checked. */
    static Map<String, Object> sendMarker(TransactionMQProducer p, String topic, Listener listener, long timeoutMs, Map<String, Object> out) throws Exception {
        Message m = new Message(topic, "TagM", MARKER, MARKER.getBytes(StandardCharsets.UTF_8));
        m.putUserProperty("idx", "-1");
        m.putUserProperty(MARKER, "1");
        Map<String, Object> r = result(p.sendMessageInTransaction(m, null), -1);
        out.put("markerChecked", listener.awaitChecked(1, true, timeoutMs));
        return r;
    }

    static Map<String, Object> result(TransactionSendResult r, int i) {
        Map<String, Object> m = Json.sendResult(r);
        m.put("idx", i);
        m.put("transactionId", r.getTransactionId());
        m.put("localState", r.getLocalTransactionState() == null ? null : r.getLocalTransactionState().name());
        return m;
    }

    /** Half messages from n threads, each parked in executeLocalTransaction; halt once all were acknowledged. */
    static void crash(TransactionMQProducer p, String topic, int n, Listener listener, long timeoutMs, Map<String, Object> out) throws Exception {
        List<String> sendErrors = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            final int idx = i;
            Thread t = new Thread(() -> {
                try {
                    p.sendMessageInTransaction(msg(topic, "crash", idx), null);
                } catch (Throwable e) {
                    synchronized (sendErrors) {
                        sendErrors.add(Json.error(e));
                    }
                    listener.executed.countDown();
                }
            }, "tx-send-" + i);
            t.setDaemon(true);
            t.start();
        }
        boolean all = listener.executed.await(timeoutMs, TimeUnit.MILLISECONDS);
        synchronized (sendErrors) {
            if (!all || !sendErrors.isEmpty()) {
                throw new IllegalStateException("half messages not all acknowledged: " + sendErrors);
            }
        }
        out.put("ok", true);
        out.put("halted", true);
        out.put("elapsedMs", System.currentTimeMillis() - listener.t0);
        listener.putResult(out);
        Json.print(out);
        Runtime.getRuntime().halt(0);  // no END_TRANSACTION, no shutdown hook, no unregister
    }

    static final class Listener implements TransactionListener {
        final String mode;
        final long t0 = System.currentTimeMillis();
        final CountDownLatch executed;
        final CountDownLatch never = new CountDownLatch(1);
        /** uniq msg id -> what executeLocalTransaction saw. */
        final Map<String, Map<String, Object>> execs = new LinkedHashMap<>();
        final List<Object> checks = new ArrayList<>();
        final Map<String, Integer> checkCounts = new TreeMap<>();
        final Map<String, Long> sentAt = new LinkedHashMap<>();

        Listener(String mode, int n) {
            this.mode = mode;
            this.executed = new CountDownLatch(mode.equals("crash") ? n : 0);
        }

        static boolean isMarker(Message m) {
            return m.getProperty(MARKER) != null;
        }

        static int idx(Message m) {
            String s = m.getProperty("idx");
            return s == null ? Integer.MIN_VALUE : Integer.parseInt(s);
        }

        static String uniq(Message m) {
            return m.getProperty("UNIQ_KEY");
        }

        @Override
        public LocalTransactionState executeLocalTransaction(Message m, Object arg) {
            LocalTransactionState state;
            if (isMarker(m)) {
                state = LocalTransactionState.UNKNOW;
            } else if (mode.equals("commit")) {
                state = LocalTransactionState.COMMIT_MESSAGE;
            } else if (mode.equals("rollback")) {
                state = LocalTransactionState.ROLLBACK_MESSAGE;
            } else {
                state = LocalTransactionState.UNKNOW;
            }
            Map<String, Object> e = Json.obj();
            e.put("idx", idx(m));
            e.put("msgId", uniq(m));
            e.put("transactionId", m.getTransactionId());
            e.put("transactionIdProperty", m.getProperty("__transactionId__"));
            e.put("topic", m.getTopic());
            e.put("properties", new TreeMap<>(m.getProperties()));
            e.put("returned", mode.equals("crash") ? null : state.name());
            synchronized (this) {
                execs.put(uniq(m), e);
                sentAt.put(uniq(m), System.currentTimeMillis());
                notifyAll();
            }
            if (mode.equals("crash")) {
                synchronized (this) {
                    e.put("sendStatus", "SEND_OK");  // executeLocalTransaction runs only after SEND_OK
                }
                executed.countDown();
                parkForever();
            }
            return state;
        }

        @Override
        public LocalTransactionState checkLocalTransaction(MessageExt m) {
            LocalTransactionState state;
            if (mode.equals("crash")) {
                state = null;  // never answered
            } else if (isMarker(m) || mode.equals("check-only") || mode.equals("commit")) {
                state = LocalTransactionState.COMMIT_MESSAGE;
            } else if (mode.equals("unknown-then-check")) {
                state = idx(m) % 2 == 0 ? LocalTransactionState.COMMIT_MESSAGE : LocalTransactionState.ROLLBACK_MESSAGE;
            } else {
                state = LocalTransactionState.ROLLBACK_MESSAGE;
            }
            long now = System.currentTimeMillis();
            Map<String, Object> c = Json.obj();
            c.put("idx", idx(m));
            c.put("msgId", uniq(m));
            c.put("transactionId", m.getTransactionId());
            c.put("topic", m.getTopic());
            c.put("queueId", m.getQueueId());
            c.put("queueOffset", m.getQueueOffset());
            c.put("commitLogOffset", m.getCommitLogOffset());
            c.put("offsetMsgId", m.getMsgId());
            c.put("body", new String(m.getBody(), StandardCharsets.UTF_8));
            c.put("keys", m.getKeys());
            c.put("tags", m.getTags());
            c.put("sysFlag", m.getSysFlag());
            c.put("properties", new TreeMap<>(m.getProperties()));
            c.put("marker", isMarker(m));
            c.put("answer", state == null ? null : state.name());
            synchronized (this) {
                Long sent = sentAt.get(uniq(m));
                c.put("msSinceSend", sent == null ? null : now - sent);
                c.put("msSinceStart", now - t0);
                checks.add(c);
                checkCounts.merge(uniq(m), 1, Integer::sum);
                notifyAll();
            }
            if (state == null) {
                parkForever();
            }
            return state;
        }

        /** Waits until `count` distinct messages (markers only, or non-markers only) were checked. */
        synchronized boolean awaitChecked(int count, boolean markers, long timeoutMs) throws InterruptedException {
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (checked(markers) < count) {
                long left = deadline - System.currentTimeMillis();
                if (left <= 0) {
                    return false;
                }
                wait(left);
            }
            return true;
        }

        private int checked(boolean markers) {
            Set<String> ids = new HashSet<>();
            for (Object o : checks) {
                Map<?, ?> c = (Map<?, ?>) o;
                if (Boolean.TRUE.equals(c.get("marker")) == markers) {
                    ids.add(String.valueOf(c.get("msgId")));
                }
            }
            return ids.size();
        }

        void parkForever() {
            while (true) {
                try {
                    never.await();
                } catch (InterruptedException ignored) {
                    // keep the transaction open
                }
            }
        }

        synchronized void putResult(Map<String, Object> out) {
            out.put("executed", new ArrayList<Object>(execs.values()));
            out.put("checks", new ArrayList<>(checks));
            out.put("checkCounts", new TreeMap<>(checkCounts));
        }
    }
}
