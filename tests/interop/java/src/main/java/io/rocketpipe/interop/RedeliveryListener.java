package io.rocketpipe.interop;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * The concurrent listener of the push consumer scenarios (PushConsumerScenario,
 * PopConsumerScenario) and the consumer they both configure.
 * Records every delivery; a message with user property redeliver=1 is answered RECONSUME_LATER
 * on its first delivery (reconsumeTimes 0) and counted as redelivered when it comes back.
 * Thread-safe: the consumer's threads call the listener while the scenario polls {@link #done}.
 */
final class RedeliveryListener implements MessageListenerConcurrently {
    private final List<Object> deliveries = new ArrayList<>();
    private final Set<String> ids = new TreeSet<>();
    private final Set<String> toRedeliver = new TreeSet<>();
    private final Set<String> redelivered = new TreeSet<>();

    /**
     * A DefaultMQPushConsumer of {@code group} on {@code ns}: instance name
     * {@code instancePrefix + nanoTime}, CLUSTERING (the default message model, whose enum moved
     * package between 4.x and 5.x), from the first offset, no VIP channel, 2 to 4 consume threads.
     */
    static DefaultMQPushConsumer consumer(String ns, String group, String instancePrefix) {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(ns);
        c.setInstanceName(instancePrefix + System.nanoTime());
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setVipChannelEnabled(false);
        c.setConsumeThreadMin(2);
        c.setConsumeThreadMax(4);
        return c;
    }

    @Override
    public synchronized ConsumeConcurrentlyStatus consumeMessage(List<MessageExt> msgs, ConsumeConcurrentlyContext ctx) {
        boolean later = false;
        for (MessageExt m : msgs) {
            deliveries.add(Json.message(m));
            ids.add(m.getMsgId());
            if ("1".equals(m.getUserProperty("redeliver"))) {
                if (m.getReconsumeTimes() == 0) {
                    toRedeliver.add(m.getMsgId());
                    later = true;
                } else {
                    redelivered.add(m.getMsgId());
                }
            }
        }
        return later ? ConsumeConcurrentlyStatus.RECONSUME_LATER : ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
    }

    /** True when {@code expected} distinct message ids were seen and every redeliver=1 message came back. */
    synchronized boolean done(int expected) {
        return ids.size() >= expected && redelivered.containsAll(toRedeliver);
    }

    /**
     * Puts the result keys shared by the scenarios into {@code out}: done, clientId, elapsedMs
     * (since {@code t0}, ms), distinct, toRedeliver, redelivered, then {@code extra} (the
     * scenario's own keys), then deliveries (every delivered message, {@link Json#message}).
     */
    synchronized void putResult(Map<String, Object> out, boolean done, DefaultMQPushConsumer c, long t0, Map<String, Object> extra) {
        out.put("done", done);
        out.put("clientId", c.buildMQClientId());
        out.put("elapsedMs", System.currentTimeMillis() - t0);
        out.put("distinct", ids.size());
        out.put("toRedeliver", new ArrayList<>(toRedeliver));
        out.put("redelivered", new ArrayList<>(redelivered));
        out.putAll(extra);
        out.put("deliveries", deliveries);
    }
}
