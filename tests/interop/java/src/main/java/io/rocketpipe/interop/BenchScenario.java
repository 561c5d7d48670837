package io.rocketpipe.interop;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * The produce/consume benchmark's scenarios driven by the official Java client, in one JVM that
 * stays up for the whole bench (bench/produce_consume.py, peer "java"), so that its scenarios are
 * interleaved with the other targets'. Args: namesrv. Prints {"ready": true}, then reads one
 * command per line from stdin, {@code run <topicPrefix> <n> <bodySize> <scenario>}, runs that scenario and
 * prints one JSON line {scenario, messages, seconds} (or {scenario, error}); {@code quit} or the
 * end of stdin stops it. Scenarios: send x1 in flight (sync), send x64 in flight (async, 64 in
 * flight), send_batch 32/req x4 (4 threads of sync batch sends), lite pull (assign all queues,
 * pullBatchSize 32) and push consumer (concurrent listener), on the topics {@code
 * <prefix>-serial|pipelined|batch} that the caller created with 8 queues. The batch topic gets
 * whole batches of 32 (n rounded down), which the consumers then read. Consumers are timed from
 * their first message, as the Python scenarios are.
 */
public final class BenchScenario {
    public static void main(String[] args) throws Exception {
        String ns = args[0];
        DefaultMQProducer p = new DefaultMQProducer("bench-java-" + System.nanoTime());
        p.setNamesrvAddr(ns);
        p.setInstanceName("bench-" + System.nanoTime());
        p.setSendMsgTimeout(30000);
        p.setVipChannelEnabled(false);
        p.setCompressMsgBodyOverHowmuch(Integer.MAX_VALUE);
        p.start();
        Map<String, Object> ready = Json.obj();
        ready.put("ready", true);
        Json.print(ready);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try {
            String line;
            while ((line = in.readLine()) != null && !line.trim().equals("quit")) {
                String[] w = line.trim().split(" ", 5);
                Map<String, Object> res;
                try {
                    if (w.length != 5 || !w[0].equals("run")) {
                        throw new IllegalArgumentException("expected: run <topicPrefix> <n> <bodySize> <scenario>, got " + line);
                    }
                    byte[] body = new byte[Integer.parseInt(w[3])];
                    java.util.Arrays.fill(body, (byte) 'x');
                    res = scenario(p, ns, w[4], w[1], Integer.parseInt(w[2]), body);
                } catch (Exception e) {
                    res = Json.obj();
                    res.put("error", e.toString());
                }
                res.put("scenario", w.length == 5 ? w[4] : line);
                Json.print(res);
            }
        } finally {
            p.shutdown();
        }
        System.exit(0);
    }

    static Map<String, Object> scenario(DefaultMQProducer p, String ns, String name, String base, int m, byte[] body)
            throws Exception {
        int whole = m / 32 * 32;  // whole batches of 32: what the batch topic then holds
        switch (name) {
            case "send x1 in flight":
                return timed(m, k -> sendSerial(p, base + "-serial", k, body));
            case "send x64 in flight":
                return timed(m, k -> sendPipelined(p, base + "-pipelined", k, body));
            case "send_batch 32/req x4":
                return timed(whole, k -> sendBatch(p, base + "-batch", k, body));
            case "lite pull":
                return timed(whole, k -> litePull(ns, base + "-batch", k));
            case "push consumer":
                return timed(whole, k -> push(ns, base + "-batch", k));
            default:
                throw new IllegalArgumentException("unknown scenario " + name);
        }
    }

    /** Runs a scenario of n messages; returns the nanoTime its clock started at (consumers: first message). */
    interface Body {
        long run(int n) throws Exception;
    }

    static Map<String, Object> timed(int n, Body b) throws Exception {
        long t0 = b.run(n);
        Map<String, Object> r = Json.obj();
        r.put("messages", n);
        r.put("seconds", (System.nanoTime() - t0) / 1e9);
        return r;
    }

    static long sendSerial(DefaultMQProducer p, String topic, int n, byte[] body) throws Exception {
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            p.send(new Message(topic, body));
        }
        return t0;
    }

    static long sendPipelined(DefaultMQProducer p, String topic, int n, byte[] body) throws Exception {
        long t0 = System.nanoTime();
        Semaphore window = new Semaphore(64);
        CountDownLatch done = new CountDownLatch(n);
        AtomicLong failed = new AtomicLong();
        for (int i = 0; i < n; i++) {
            window.acquire();
            p.send(new Message(topic, body), new SendCallback() {
                @Override
                public void onSuccess(SendResult r) {
                    window.release();
                    done.countDown();
                }

                @Override
                public void onException(Throwable e) {
                    failed.incrementAndGet();
                    window.release();
                    done.countDown();
                }
            });
        }
        done.await(300, TimeUnit.SECONDS);
        if (failed.get() > 0) {
            throw new IllegalStateException(failed.get() + " async sends failed");
        }
        return t0;
    }

    static long sendBatch(DefaultMQProducer p, String topic, int n, byte[] body) throws Exception {
        long t0 = System.nanoTime();
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<?>> fs = new ArrayList<>();
            int batches = n / 32;
            for (int t = 0; t < 4; t++) {
                final int share = batches / 4 + (t < batches % 4 ? 1 : 0);
                fs.add(pool.submit(() -> {
                    for (int b = 0; b < share; b++) {
                        List<Message> batch = new ArrayList<>(32);
                        for (int i = 0; i < 32; i++) {
                            batch.add(new Message(topic, body));
                        }
                        p.send(batch);
                    }
                    return null;
                }));
            }
            for (Future<?> f : fs) {
                f.get();
            }
        } finally {
            pool.shutdown();
        }
        return t0;
    }

    static long litePull(String ns, String topic, int n) throws Exception {
        DefaultLitePullConsumer c = new DefaultLitePullConsumer("bench-lp-" + System.nanoTime());
        c.setNamesrvAddr(ns);
        c.setInstanceName("bench-" + System.nanoTime());
        c.setVipChannelEnabled(false);
        c.setAutoCommit(false);
        c.setPullBatchSize(32);
        // a new group starts at offset 0 of every queue, so no seek(mq, 0) after assign(): seek
        // replaces the pull task assign() started while it may be mid-pull (one run with seek
        // read 49,696 of 49,984 messages in its 300 s)
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.start();
        try {
            Collection<MessageQueue> mqs = c.fetchMessageQueues(topic);
            c.assign(mqs);
            int got = 0;
            long t0 = 0;
            long deadline = System.currentTimeMillis() + 300_000;
            while (got < n && System.currentTimeMillis() < deadline) {
                int k = c.poll(1000).size();
                if (k > 0 && got == 0) {
                    t0 = System.nanoTime();
                }
                got += k;
            }
            if (got < n) {
                throw new IllegalStateException("lite pull read " + got + " of " + n);
            }
            return t0;
        } finally {
            c.shutdown();
        }
    }

    static long push(String ns, String topic, int n) throws Exception {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer("bench-push-" + System.nanoTime());
        c.setNamesrvAddr(ns);
        c.setInstanceName("bench-" + System.nanoTime());
        c.setVipChannelEnabled(false);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic, "*");
        CountDownLatch done = new CountDownLatch(n);
        AtomicLong first = new AtomicLong();
        c.registerMessageListener((MessageListenerConcurrently) (List<MessageExt> msgs, org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext ctx) -> {
            first.compareAndSet(0, System.nanoTime());
            for (int i = 0; i < msgs.size(); i++) {
                done.countDown();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        try {
            if (!done.await(300, TimeUnit.SECONDS)) {
                throw new IllegalStateException("push consumer got " + (n - done.getCount()) + " of " + n);
            }
            return first.get();
        } finally {
            c.shutdown();
        }
    }
}
