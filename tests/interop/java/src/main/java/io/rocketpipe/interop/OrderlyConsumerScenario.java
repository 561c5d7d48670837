package io.rocketpipe.interop;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.impl.consumer.ProcessQueue;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * DefaultMQPushConsumer with MessageListenerOrderly (CLUSTERING, so it locks its queues on the
 * broker with LOCK_BATCH_MQ) and a DefaultMQProducer sending with a per-order-id queue selector.
 * Args: namesrv topic group orders perOrder suspendBody gateDir timeoutSeconds.
 *
 * <ol>
 * <li>starts the consumer and waits until every queue of the topic is in its process-queue table
 * and locked (the broker granted the locks);</li>
 * <li>writes {@code gateDir/locked} (a JSON line: clientId, locked queues) and waits for
 * {@code gateDir/go} (the test checks the broker's lock table in between);</li>
 * <li>sends orders x perOrder messages: body "o{order}-s{seq}", keys "order-{order}", user
 * properties order/seq, queue = queues[order % queues.size()] (MessageQueueSelector);</li>
 * <li>consumes until every message was seen; the message whose body is suspendBody is answered
 * SUSPEND_CURRENT_QUEUE_A_MOMENT (300 ms) on its first delivery, so it comes again, first in
 * its queue, with reconsumeTimes 1;</li>
 * <li>shuts the consumer down (which unlocks its queues on the broker) and prints the
 * deliveries in consumption order.</li>
 * </ol>
 */
public final class OrderlyConsumerScenario {
    public static void main(String[] args) throws Exception {
        String ns = args[0];
        String topic = args[1];
        String group = args[2];
        int orders = Integer.parseInt(args[3]);
        int perOrder = Integer.parseInt(args[4]);
        String suspendBody = args[5];
        Path gate = Paths.get(args[6]);
        long deadline = System.currentTimeMillis() + Long.parseLong(args[7]) * 1000L;
        int expected = orders * perOrder;

        List<Object> deliveries = new ArrayList<>();
        Set<String> bodies = new TreeSet<>();
        boolean[] redelivered = {false};
        Map<String, Object> out = Json.obj();

        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(ns);
        c.setInstanceName("interop-orderly-" + System.nanoTime());
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setVipChannelEnabled(false);
        c.setConsumeThreadMin(4);
        c.setConsumeThreadMax(4);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> {
            synchronized (deliveries) {
                for (MessageExt m : msgs) {
                    Map<String, Object> d = Json.message(m);
                    d.put("thread", Thread.currentThread().getName());
                    deliveries.add(d);
                    String body = new String(m.getBody(), StandardCharsets.UTF_8);
                    bodies.add(body);
                    if (body.equals(suspendBody)) {
                        if (m.getReconsumeTimes() == 0) {
                            ctx.setSuspendCurrentQueueTimeMillis(300);
                            return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT;
                        }
                        redelivered[0] = true;
                    }
                }
            }
            return ConsumeOrderlyStatus.SUCCESS;
        });
        DefaultMQProducer p = new DefaultMQProducer(group + "_producer");
        p.setNamesrvAddr(ns);
        p.setInstanceName("interop-orderly-p-" + System.nanoTime());
        p.setVipChannelEnabled(false);
        p.setSendMsgTimeout(10000);
        long t0 = System.currentTimeMillis();
        try {
            c.start();
            p.start();
            List<MessageQueue> mqs = p.fetchPublishMessageQueues(topic);
            // 1. every queue of the topic locked by this consumer
            List<Object> locked = Json.list();
            while (System.currentTimeMillis() < deadline) {
                locked.clear();
                Map<MessageQueue, ProcessQueue> table = c.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable();
                for (Map.Entry<MessageQueue, ProcessQueue> e : table.entrySet()) {
                    if (e.getKey().getTopic().equals(topic) && e.getValue().isLocked()) {
                        locked.add(e.getKey().getQueueId());
                    }
                }
                if (locked.size() == mqs.size()) {
                    break;
                }
                Thread.sleep(50);
            }
            out.put("lockedQueues", new ArrayList<>(locked));
            out.put("lockedAfterMs", System.currentTimeMillis() - t0);
            // 2. hand over to the test, wait for it
            Map<String, Object> gateInfo = Json.obj();
            gateInfo.put("clientId", c.buildMQClientId());
            gateInfo.put("lockedQueues", new ArrayList<>(locked));
            Path tmp = gate.resolve("locked.tmp");
            Files.write(tmp, Json.write(gateInfo).getBytes(StandardCharsets.UTF_8));
            Files.move(tmp, gate.resolve("locked"));
            while (!Files.exists(gate.resolve("go")) && System.currentTimeMillis() < deadline) {
                Thread.sleep(50);
            }
            out.put("goAfterMs", System.currentTimeMillis() - t0);
            // 3. send, each order to one queue
            MessageQueueSelector byOrder = (queues, msg, arg) -> queues.get((Integer) arg % queues.size());
            List<Object> sent = Json.list();
            for (int s = 0; s < perOrder; s++) {
                for (int o = 0; o < orders; o++) {
                    Message m = new Message(topic, "TagO", "order-" + o, ("o" + o + "-s" + s).getBytes(StandardCharsets.UTF_8));
                    m.putUserProperty("order", Integer.toString(o));
                    m.putUserProperty("seq", Integer.toString(s));
                    Map<String, Object> r = Json.sendResult(p.send(m, byOrder, o));
                    r.put("body", "o" + o + "-s" + s);
                    sent.add(r);
                }
            }
            out.put("sent", sent);
            // 4. consume everything, including the suspended message's second delivery
            boolean done = false;
            while (System.currentTimeMillis() < deadline) {
                synchronized (deliveries) {
                    done = bodies.size() >= expected && redelivered[0];
                }
                if (done) {
                    break;
                }
                Thread.sleep(50);
            }
            out.put("done", done);
            out.put("consumedAfterMs", System.currentTimeMillis() - t0);
            out.put("ok", true);
        } catch (Exception e) {
            out.put("ok", false);
            out.put("error", Json.error(e));
        } finally {
            out.put("clientId", c.buildMQClientId());
            p.shutdown();
            c.shutdown();  // ConsumeMessageOrderlyService.shutdown -> unlockAll(false)
        }
        synchronized (deliveries) {
            out.put("elapsedMs", System.currentTimeMillis() - t0);
            out.put("distinct", bodies.size());
            out.put("deliveries", deliveries);
        }
        Json.print(out);
        // 5.x leaves a non-daemon "ConsumeMessageScheduledThread_" (its ConsumeMessagePopOrderlyService's
        // executor, never shut down) running after shutdown(): end the JVM explicitly
        System.exit(0);
    }
}
