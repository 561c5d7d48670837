package io.rocketpipe.interop;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * DefaultLitePullConsumer: fetchMessageQueues, assign all, seek every queue to seekOffset,
 * poll until expected messages (or timeout), commitSync, report committed offsets.
 * Args: namesrv topic group seekOffset expected timeoutSeconds.
 */
public final class LitePullScenario {
    public static void main(String[] args) throws Exception {
        String ns = args[0];
        String topic = args[1];
        String group = args[2];
        long seekOffset = Long.parseLong(args[3]);
        int expected = Integer.parseInt(args[4]);
        long timeoutMs = Long.parseLong(args[5]) * 1000L;
        DefaultLitePullConsumer c = new DefaultLitePullConsumer(group);
        c.setNamesrvAddr(ns);
        c.setInstanceName("interop-" + System.nanoTime());
        c.setAutoCommit(false);
        c.setVipChannelEnabled(false);
        c.setPullBatchSize(8);
        Map<String, Object> out = new LinkedHashMap<>();
        List<Object> polled = new ArrayList<>();
        c.start();
        try {
            Collection<MessageQueue> mqs = c.fetchMessageQueues(topic);
            List<MessageQueue> sorted = new ArrayList<>(mqs);
            sorted.sort(null);
            List<Object> queues = new ArrayList<>();
            for (MessageQueue mq : sorted) {
                queues.add(Json.mq(mq));
            }
            out.put("queues", queues);
            c.assign(sorted);
            // seek interrupts the queue's pull task (tryInterrupt). In the 5.3.3 client an
            // interrupted thread's next request fails in Semaphore.tryAcquire with an
            // InterruptedException, which invokeSync treats as a send failure: it closes the
            // channel it shares with every other request to the broker, seek's own min / max offset
            // calls included ("send request ... failed"), whichever broker it talks to. So the
            // tasks are paused before the seeks (a task that has not started yet makes no request),
            // and a seek whose call met a closed channel is tried again, at most 8 times in all.
            c.pause(sorted);
            int seekRetries = 0;
            for (MessageQueue mq : sorted) {
                for (int attempt = 1; ; attempt++) {
                    try {
                        c.seek(mq, seekOffset);
                        break;
                    } catch (MQClientException e) {
                        if (attempt >= 8) {
                            throw e;
                        }
                        seekRetries++;
                        Thread.sleep(500);
                    }
                }
            }
            c.resume(sorted);
            out.put("seekRetries", seekRetries);
            long t0 = System.currentTimeMillis();
            int n = 0;
            while (n < expected && System.currentTimeMillis() - t0 < timeoutMs) {
                List<MessageExt> msgs = c.poll(500);
                for (MessageExt m : msgs) {
                    polled.add(Json.message(m));
                }
                n += msgs.size();
            }
            c.commitSync();
            Map<String, Object> committed = new LinkedHashMap<>();
            for (MessageQueue mq : sorted) {
                committed.put(Integer.toString(mq.getQueueId()), c.committed(mq));
            }
            out.put("committed", committed);
            out.put("ok", true);
        } catch (Exception e) {
            out.put("ok", false);
            out.put("error", Json.error(e));
        } finally {
            out.put("polled", polled);
            c.shutdown();
        }
        Json.print(out);
    }
}
