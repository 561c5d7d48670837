package io.rocketpipe.interop;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * DefaultMQPushConsumer (CLUSTERING, concurrently) from the first offset.
 * Args: namesrv topic group expression expectedDistinct timeoutSeconds.
 * A message with user property redeliver=1 is answered RECONSUME_LATER on its first delivery;
 * the scenario ends when expectedDistinct message ids were seen and every redeliver=1 message
 * came back (or at the timeout). With expectedDistinct 0 it consumes for the whole timeout
 * (several instances of one group, each seeing its share). Prints every delivery.
 */
public final class PushConsumerScenario {
    public static void main(String[] args) throws Exception {
        String ns = args[0];
        String topic = args[1];
        String group = args[2];
        String expression = args[3];
        int expected = Integer.parseInt(args[4]);
        long timeoutMs = Long.parseLong(args[5]) * 1000L;
        List<Object> deliveries = new ArrayList<>();
        Set<String> ids = new TreeSet<>();
        Set<String> toRedeliver = new TreeSet<>();
        Set<String> redelivered = new TreeSet<>();
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(ns);
        c.setInstanceName("interop-" + System.nanoTime());
        // CLUSTERING is the default message model (its enum moved package between 4.x and 5.x)
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setVipChannelEnabled(false);
        c.setConsumeThreadMin(2);
        c.setConsumeThreadMax(4);
        c.subscribe(topic, expression);
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            boolean later = false;
            synchronized (deliveries) {
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
            }
            return later ? ConsumeConcurrentlyStatus.RECONSUME_LATER : ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        long t0 = System.currentTimeMillis();
        c.start();
        boolean done = false;
        while (System.currentTimeMillis() - t0 < timeoutMs) {
            synchronized (deliveries) {
                done = ids.size() >= expected && redelivered.containsAll(toRedeliver);
            }
            if (done && expected > 0) {
                break;
            }
            Thread.sleep(100);
        }
        // let the offsets reach the broker before shutting down (shutdown persists them too)
        Thread.sleep(500);
        c.shutdown();
        Map<String, Object> out = new LinkedHashMap<>();
        synchronized (deliveries) {
            out.put("done", done);
            out.put("clientId", c.buildMQClientId());
            out.put("elapsedMs", System.currentTimeMillis() - t0);
            out.put("distinct", ids.size());
            out.put("toRedeliver", new ArrayList<>(toRedeliver));
            out.put("redelivered", new ArrayList<>(redelivered));
            out.put("deliveries", deliveries);
        }
        Json.print(out);
    }
}
