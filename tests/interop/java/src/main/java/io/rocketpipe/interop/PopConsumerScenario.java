package io.rocketpipe.interop;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * DefaultMQPushConsumer with server-side rebalance: {@code setClientRebalance(false)} (5.x only,
 * called by reflection so that the class also compiles against 4.9.8, whose client has no POP).
 * The 5.x client then asks the broker for its queues with QUERY_ASSIGNMENT; queues assigned in
 * POP mode are consumed with POP_MESSAGE / ACK_MESSAGE, a RECONSUME_LATER becomes
 * CHANGE_MESSAGE_INVISIBLETIME (10 s for the first retry: DefaultMQPushConsumerImpl.popDelayLevel[0]).
 * Args: namesrv topic group expectedDistinct timeoutSeconds.
 * A message with user property redeliver=1 is answered RECONSUME_LATER on its first delivery;
 * the scenario ends when expectedDistinct ids were seen and every such message came back.
 * Prints the deliveries plus the consumer's pop and pull process queues (seen while running).
 */
public final class PopConsumerScenario {
    public static void main(String[] args) throws Exception {
        String ns = args[0];
        String topic = args[1];
        String group = args[2];
        int expected = Integer.parseInt(args[3]);
        long timeoutMs = Long.parseLong(args[4]) * 1000L;
        RedeliveryListener listener = new RedeliveryListener();
        DefaultMQPushConsumer c = RedeliveryListener.consumer(ns, group, "interop-pop-");
        Map<String, Object> out = Json.obj();
        boolean serverRebalance;
        try {
            Method m = c.getClass().getMethod("setClientRebalance", boolean.class);
            m.invoke(c, false);
            serverRebalance = true;
        } catch (NoSuchMethodException e) {
            serverRebalance = false;
        }
        out.put("serverRebalanceApi", serverRebalance);
        c.subscribe(topic, "*");
        c.registerMessageListener(listener);
        long t0 = System.currentTimeMillis();
        c.start();
        Set<String> popQueues = new TreeSet<>();
        Set<String> pullQueues = new TreeSet<>();
        boolean done = false;
        while (System.currentTimeMillis() - t0 < timeoutMs) {
            popQueues.addAll(queues(c, "getPopProcessQueueTable"));
            pullQueues.addAll(queues(c, "getProcessQueueTable"));
            done = listener.done(expected);
            if (done) {
                break;
            }
            Thread.sleep(100);
        }
        // let the last ACK_MESSAGEs (sent asynchronously) reach the broker; shutdown waits for none
        Thread.sleep(500);
        c.shutdown();
        Map<String, Object> extra = Json.obj();
        extra.put("popQueues", new ArrayList<>(popQueues));
        extra.put("pullQueues", new ArrayList<>(pullQueues));
        listener.putResult(out, done, c, t0, extra);
        Json.print(out);
        System.exit(0);  // do not depend on the client's executors all being shut down
    }

    /** "topic/brokerName/queueId" of the keys of RebalanceImpl.<getter>() (empty when the getter does not exist: 4.x). */
    static List<String> queues(DefaultMQPushConsumer c, String getter) {
        List<String> out = new ArrayList<>();
        try {
            Object rebalance = c.getDefaultMQPushConsumerImpl().getRebalanceImpl();
            Object table = rebalance.getClass().getMethod(getter).invoke(rebalance);
            for (Object k : ((Map<?, ?>) table).keySet()) {
                MessageQueue mq = (MessageQueue) k;
                out.add(mq.getTopic() + "/" + mq.getBrokerName() + "/" + mq.getQueueId());
            }
        } catch (NoSuchMethodException e) {
            return out;
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
        return out;
    }
}
