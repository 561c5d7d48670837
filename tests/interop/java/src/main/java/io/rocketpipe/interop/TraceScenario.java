package io.rocketpipe.interop;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Message trace: DefaultMQProducer and DefaultMQPushConsumer with enableMsgTrace (the default
 * trace topic RMQ_SYS_TRACE_TOPIC). Args: namesrv topic producerGroup consumerGroup count
 * timeoutSeconds. Message i has tags "TagT", keys "trace-key-i", body "trace-i". The consumer
 * answers CONSUME_SUCCESS; both are shut down at the end, which flushes their trace dispatchers.
 * Prints the send results and the consumed msg ids.
 */
public final class TraceScenario {
    public static void main(String[] args) throws Exception {
        String ns = args[0];
        String topic = args[1];
        String producerGroup = args[2];
        String consumerGroup = args[3];
        int n = Integer.parseInt(args[4]);
        long timeoutMs = Long.parseLong(args[5]) * 1000L;
        Map<String, Object> out = Json.obj();
        DefaultMQProducer p = new DefaultMQProducer(producerGroup, true, null);
        p.setNamesrvAddr(ns);
        p.setInstanceName("interop-trace-" + System.nanoTime());
        p.setSendMsgTimeout(10000);
        p.setVipChannelEnabled(false);
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(consumerGroup, true, null);
        c.setNamesrvAddr(ns);
        c.setInstanceName("interop-trace-" + System.nanoTime());
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setVipChannelEnabled(false);
        Set<String> consumed = ConcurrentHashMap.newKeySet();
        try {
            p.start();
            List<Object> sends = Json.list();
            for (int i = 0; i < n; i++) {
                Message m = new Message(topic, "TagT", "trace-key-" + i, ("trace-" + i).getBytes(StandardCharsets.UTF_8));
                sends.add(Json.sendResult(p.send(m)));
            }
            out.put("sends", sends);
            c.subscribe(topic, "*");
            c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                for (MessageExt m : msgs) {
                    consumed.add(m.getMsgId());
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            c.start();
            long t0 = System.currentTimeMillis();
            while (consumed.size() < n && System.currentTimeMillis() - t0 < timeoutMs) {
                Thread.sleep(50);
            }
            List<Object> consumedIds = Json.list();
            consumedIds.addAll(consumed);
            out.put("consumed", consumedIds);
            out.put("ok", consumed.size() >= n);
        } catch (Exception e) {
            out.put("ok", false);
            out.put("error", Json.error(e));
        } finally {
            c.shutdown();
            p.shutdown();
        }
        Json.print(out);
    }
}
