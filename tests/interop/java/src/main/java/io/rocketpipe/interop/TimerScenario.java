package io.rocketpipe.interop;

import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * 5.x timer messages sent with the official client's own API: {@code Message.setDelayTimeMs},
 * {@code setDelayTimeSec} and {@code setDeliverTimeMs} (5.x only, called by reflection so that
 * the class also compiles against 4.9.8, which has no timer API: it prints timerApi=false and
 * sends nothing).
 * Args: namesrv topic group timeoutSeconds.
 * A DefaultMQPushConsumer of group subscribes to topic first (its queues assigned before any
 * send, so the receive time of each message is meaningful); then the producer sends, each with
 * user property label: "now" (plain), "delayMs" (setDelayTimeMs 3000), "delaySec"
 * (setDelayTimeSec 2), "deliverMs" (setDeliverTimeMs clientNow + 4000) and "tooFar"
 * (setDelayTimeSec 3 days + 60 s, beyond timerMaxDelaySec: the broker's refusal is recorded).
 * Ends when the four accepted labels were delivered (or at the timeout). Prints, per label, the
 * client's clock just before the send ("sentAtMs"), the send result or its error (responseCode
 * and message of an MQBrokerException), and every delivery with the client's clock when the
 * listener got it ("receivedAtMs").
 */
public final class TimerScenario {
    static final long DELAY_MS = 3000L;
    static final long DELAY_SEC = 2L;
    static final long DELIVER_AFTER_MS = 4000L;
    static final long TOO_FAR_SEC = 3L * 24 * 3600 + 60;

    public static void main(String[] args) throws Exception {
        String ns = args[0];
        String topic = args[1];
        String group = args[2];
        long timeoutMs = Long.parseLong(args[3]) * 1000L;
        Map<String, Object> out = Json.obj();
        boolean api = timerApi();
        out.put("timerApi", api);
        if (!api) {
            Json.print(out);
            return;
        }
        List<Object> deliveries = Json.list();
        Set<String> labels = new TreeSet<>();
        DefaultMQPushConsumer c = RedeliveryListener.consumer(ns, group, "interop-timer-");
        // the first rebalance bumps the subscription's subVersion and heartbeats only if no
        // heartbeat is running (tryLock): a start-up heartbeat racing it leaves the broker with the
        // old version, and pulls get SUBSCRIPTION_NOT_LATEST until the next heartbeat (30 s by
        // default) — on any broker. Heartbeats every second keep the receive times meaningful.
        c.setHeartbeatBrokerInterval(1000);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            long now = System.currentTimeMillis();
            synchronized (deliveries) {
                for (MessageExt m : msgs) {
                    Map<String, Object> d = Json.message(m);
                    d.put("receivedAtMs", now);
                    deliveries.add(d);
                    labels.add(m.getUserProperty("label"));
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        long t0 = System.currentTimeMillis();
        // the consumer's queues are assigned before the first send (its first rebalance)
        while (PopConsumerScenario.queues(c, "getProcessQueueTable").isEmpty()) {
            if (System.currentTimeMillis() - t0 > timeoutMs) {
                throw new IllegalStateException("no queue assigned to the consumer");
            }
            Thread.sleep(50);
        }
        DefaultMQProducer p = new DefaultMQProducer(group + "_pg");
        p.setNamesrvAddr(ns);
        p.setInstanceName("interop-timer-p-" + System.nanoTime());
        p.setVipChannelEnabled(false);
        p.setSendMsgTimeout(10000);
        p.setRetryTimesWhenSendFailed(0);
        p.start();
        Map<String, Object> sends = Json.obj();
        try {
            send(p, sends, msg(topic, "now"));
            Message m = msg(topic, "delayMs");
            call(m, "setDelayTimeMs", DELAY_MS);
            send(p, sends, m);
            m = msg(topic, "delaySec");
            call(m, "setDelayTimeSec", DELAY_SEC);
            send(p, sends, m);
            m = msg(topic, "deliverMs");
            long at = System.currentTimeMillis() + DELIVER_AFTER_MS;
            call(m, "setDeliverTimeMs", at);
            out.put("deliverAtMs", at);
            send(p, sends, m);
            m = msg(topic, "tooFar");
            call(m, "setDelayTimeSec", TOO_FAR_SEC);
            send(p, sends, m);
        } finally {
            p.shutdown();
        }
        out.put("sends", sends);
        boolean done = false;
        while (System.currentTimeMillis() - t0 < timeoutMs) {
            synchronized (deliveries) {
                done = labels.containsAll(List.of("now", "delayMs", "delaySec", "deliverMs"));
            }
            if (done) {
                break;
            }
            Thread.sleep(50);
        }
        c.shutdown();
        out.put("done", done);
        synchronized (deliveries) {
            out.put("deliveries", deliveries);
        }
        Json.print(out);
        System.exit(0);  // do not depend on the client's executors all being shut down
    }

    private static boolean timerApi() {
        try {
            Message.class.getMethod("setDelayTimeMs", long.class);
            return true;
        } catch (NoSuchMethodException e) {
            return false;
        }
    }

    private static Message msg(String topic, String label) {
        Message m = new Message(topic, "TagTimer", ("timer-" + label).getBytes(StandardCharsets.UTF_8));
        m.setKeys("key-" + label);
        m.putUserProperty("label", label);
        return m;
    }

    private static void call(Message m, String setter, long value) throws Exception {
        Method s = Message.class.getMethod(setter, long.class);
        s.invoke(m, value);
    }

    private static void send(DefaultMQProducer p, Map<String, Object> sends, Message m) {
        Map<String, Object> one = Json.obj();
        one.put("properties", new java.util.TreeMap<>(m.getProperties()));
        long now = System.currentTimeMillis();
        one.put("sentAtMs", now);
        try {
            SendResult r = p.send(m);
            one.put("result", Json.sendResult(r));
        } catch (MQBrokerException e) {
            one.put("responseCode", e.getResponseCode());
            one.put("errorMessage", e.getErrorMessage());
        } catch (Exception e) {
            one.put("error", Json.error(e));
        }
        sends.put(m.getUserProperty("label"), one);
    }
}
