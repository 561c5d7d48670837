package io.rocketpipe.interop;

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
 * The produce/consume benchmark's scenarios driven by the official Java client, in one warmed JVM
 * (bench/produce_consume.py, peer "java"). Args: namesrv topicPrefix messages size rounds warmup.
 * For each round (the first {@code warmup} messages long and untimed): send x1 (sync), send x64
 * (async, 64 in flight), send_batch 32/req x4 (4 threads of sync batch sends), lite pull
 * (assign all queues, pullBatchSize 32) and push consumer (concurrent listener) on fresh topics
 * {@code <prefix>-r<i>-serial|pipelined|batch} that the caller created with 8 queues. Consumers are timed
 * from their first message, as the Python scenarios are. Prints one JSON line: rounds, each a map
 * scenario -> {messages, seconds}.
 */
public final class BenchScenario {
    public static void main(String[] args) throws Exception {
        String ns = args[0];
        String prefix = args[1];
        int n = Integer.parseInt(args[2]);
        int size = Integer.parseInt(args[3]);
        int rounds = Integer.parseInt(args[4]);
        int warmup = Integer.parseInt(args[5]);
        byte[] body = new byte[size];
        java.util.Arrays.fill(body, (byte) 'x');
        DefaultMQProducer p = new DefaultMQProducer("bench-java-" + System.nanoTime());
        p.setNamesrvAddr(ns);
        p.setInstanceName("bench-" + System.nanoTime());
        p.setSendMsgTimeout(30000);
        p.setVipChannelEnabled(false);
        p.setCompressMsgBodyOverHowmuch(Integer.MAX_VALUE);
        p.start();
        List<Object> out = Json.list();
        try {
            for (int r = 0; r <= rounds; r++) {
                int m = r == 0 ? warmup : n;
                if (m <= 0) {
                    continue;
                }
                String base = prefix + "-" + (r == 0 ? "warmup" : "r" + r);
                Map<String, Object> res = Json.obj();
                res.put("send x1 in flight", timed(Math.max(1, m / 20), k -> sendSerial(p, base + "-serial", k, body)));
                res.put("send x64 in flight", timed(Math.max(1, m / 2), k -> sendPipelined(p, base + "-pipelined", k, body)));
                int whole = m / 32 * 32;  // whole batches of 32: what the batch topic then holds
                res.put("send_batch 32/req x4", timed(whole, k -> sendBatch(p, base + "-batch", k, body)));
                res.put("lite pull", timed(whole, k -> litePull(ns, base + "-batch", k)));
                res.put("push consumer", timed(whole, k -> push(ns, base + "-batch", k)));
                if (r > 0) {
                    out.add(res);
                }
            }
        } finally {
            p.shutdown();
        }
        Map<String, Object> top = Json.obj();
        top.put("rounds", out);
        Json.print(top);
        System.exit(0);
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
