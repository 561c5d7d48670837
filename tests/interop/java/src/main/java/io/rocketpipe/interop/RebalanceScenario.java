package io.rocketpipe.interop;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Several DefaultMQPushConsumers of one group (CLUSTERING, concurrently, from the first offset;
 * each its own client instance) rebalancing the queues of a topic that lives on more than one
 * broker group.
 * Args: namesrv topic group members totalQueues expectedDistinct syncDir timeoutSeconds.
 * Starts the members, waits until their assignments (RebalanceImpl.getProcessQueueTable) have
 * settled — together totalQueues queues, each member's share what Java's
 * AllocateMessageQueueAveragely gives it for all the members — then creates
 * syncDir/ready — the test sends only then, so no queue changes hands while messages flow —
 * and consumes until expectedDistinct message ids were seen (or the timeout), then creates
 * syncDir/consumed and keeps running (the members commit their offsets every second) until
 * syncDir/stop exists. Prints each member's assignment at ready time and at the end, every change
 * of a member's assignment (polled every 20 ms) and its deliveries up to then; then shuts the
 * members down and prints how many deliveries that caused.
 */
public final class RebalanceScenario {
    /** One member: its consumer and what its listener got. */
    static final class Member implements MessageListenerConcurrently {
        final DefaultMQPushConsumer consumer;
        final List<Object> deliveries = new ArrayList<>();

        Member(String ns, String group, int index) {
            consumer = RedeliveryListener.consumer(ns, group, "interop-rebalance-" + index + "-");
            // A member whose queues change bumps its subscription's subVersion and sends a
            // heartbeat, but only if no heartbeat round is running (tryLock); a round already
            // running may have sent the old version to one broker, which then answers that
            // member's pulls SUBSCRIPTION_NOT_LATEST until its next heartbeat (30 s by default),
            // Apache's broker as rocketpipe's. Heartbeats every second keep that wait short.
            consumer.setHeartbeatBrokerInterval(1000);
            consumer.setPersistConsumerOffsetInterval(1000);
        }

        @Override
        public synchronized ConsumeConcurrentlyStatus consumeMessage(List<MessageExt> msgs, ConsumeConcurrentlyContext ctx) {
            for (MessageExt m : msgs) {
                Map<String, Object> d = Json.obj();
                d.put("msgId", m.getMsgId());
                d.put("body", new String(m.getBody(), StandardCharsets.UTF_8));
                d.put("brokerName", m.getBrokerName());
                d.put("queueId", m.getQueueId());
                d.put("queueOffset", m.getQueueOffset());
                d.put("reconsumeTimes", m.getReconsumeTimes());
                d.put("receivedAtMs", System.currentTimeMillis());
                d.put("pulledFrom", ctx.getMessageQueue().getBrokerName() + "/" + ctx.getMessageQueue().getQueueId());
                deliveries.add(d);
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        }

        synchronized int count(Set<String> ids) {
            for (Object o : deliveries) {
                @SuppressWarnings("unchecked")
                Map<String, Object> d = (Map<String, Object>) o;
                ids.add((String) d.get("msgId"));
            }
            return ids.size();
        }

        /** "topic/brokerName/queueId" of the topic's queues this member holds (not its %RETRY% queues), sorted. */
        List<String> assigned(String topic) {
            List<String> out = new ArrayList<>();
            for (String q : PopConsumerScenario.queues(consumer, "getProcessQueueTable")) {
                if (q.startsWith(topic + "/")) {
                    out.add(q);
                }
            }
            Collections.sort(out);
            return out;
        }
    }

    public static void main(String[] args) throws Exception {
        String ns = args[0];
        String topic = args[1];
        String group = args[2];
        int n = Integer.parseInt(args[3]);
        int totalQueues = Integer.parseInt(args[4]);
        int expected = Integer.parseInt(args[5]);
        Path sync = Paths.get(args[6]);
        long timeoutMs = Long.parseLong(args[7]) * 1000L;
        List<Member> members = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Member m = new Member(ns, group, i);
            m.consumer.subscribe(topic, "*");
            m.consumer.registerMessageListener(m);
            m.consumer.start();
            members.add(m);
        }
        Map<String, Object> out = Json.obj();
        long t0 = System.currentTimeMillis();
        // every change of a member's assignment, polled every 20 ms: [ms since start, member, queues]
        List<Object> changes = java.util.Collections.synchronizedList(new ArrayList<>());
        Thread watcher = new Thread(() -> {
            List<List<String>> last = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                last.add(null);
            }
            while (!Thread.currentThread().isInterrupted()) {
                for (int i = 0; i < n; i++) {
                    List<String> a = members.get(i).assigned(topic);
                    if (!a.equals(last.get(i))) {
                        last.set(i, a);
                        changes.add(List.of(System.currentTimeMillis() - t0, i, a));
                    }
                }
                try {
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
        watcher.setDaemon(true);
        watcher.start();
        List<Object> atReady = null;
        while (System.currentTimeMillis() - t0 < timeoutMs) {
            List<List<String>> now = new ArrayList<>();
            for (Member m : members) {
                now.add(m.assigned(topic));
            }
            if (settled(members, now, topic, group, totalQueues)) {
                atReady = new ArrayList<>(now);
                break;
            }
            Thread.sleep(100);
        }
        out.put("startedAtMs", t0);
        out.put("rebalanceMs", System.currentTimeMillis() - t0);
        out.put("ready", atReady != null);
        out.put("assignedAtReady", atReady);
        boolean done = false;
        if (atReady != null) {
            Files.createFile(sync.resolve("ready"));
            while (System.currentTimeMillis() - t0 < timeoutMs) {
                Set<String> ids = new HashSet<>();
                for (Member m : members) {
                    m.count(ids);
                }
                done = ids.size() >= expected;
                if (done) {
                    break;
                }
                Thread.sleep(100);
            }
        }
        out.put("done", done);
        if (done) {
            // the test reads the offsets the running members commit (every second, and with
            // their pulls), then lets the members go
            Files.createFile(sync.resolve("consumed"));
            while (!Files.exists(sync.resolve("stop")) && System.currentTimeMillis() - t0 < timeoutMs) {
                Thread.sleep(20);
            }
        }
        List<Object> finalAssigned = Json.list();
        for (Member m : members) {
            finalAssigned.add(m.assigned(topic));
        }
        out.put("assignedAtEnd", finalAssigned);
        watcher.interrupt();
        watcher.join();
        synchronized (changes) {
            out.put("assignmentChanges", new ArrayList<>(changes));
        }
        // the deliveries up to now: shutting the members down one by one rebalances the queues of
        // each leaving member onto those still running, which may consume again what was consumed
        // after the last offset commit (at-least-once), so later deliveries are only counted
        List<Object> all = Json.list();
        int before = 0;
        for (Member m : members) {
            synchronized (m) {
                all.add(new ArrayList<>(m.deliveries));
                before += m.deliveries.size();
            }
        }
        out.put("deliveries", all);
        for (Member m : members) {
            m.consumer.shutdown();
        }
        int after = 0;
        for (Member m : members) {
            synchronized (m) {
                after += m.deliveries.size();
            }
        }
        out.put("deliveriesWhileShuttingDown", after - before);
        Json.print(out);
        System.exit(0);  // do not depend on the client's executors all being shut down
    }

    /**
     * Settled: the members together hold totalQueues queues, and each holds exactly what Java's
     * own AllocateMessageQueueAveragely gives it for all the members' client ids (as RebalanceImpl
     * calls it: queues and ids sorted). A member still working from an older member list fails
     * this even when the assignments happen to be disjoint and complete.
     */
    static boolean settled(List<Member> members, List<List<String>> assigned, String topic, String group, int totalQueues) {
        Set<String> union = new TreeSet<>();
        for (List<String> a : assigned) {
            union.addAll(a);
        }
        if (union.size() != totalQueues) {
            return false;
        }
        List<MessageQueue> mqAll = new ArrayList<>();
        for (String q : union) {
            String[] parts = q.substring(topic.length() + 1).split("/");
            mqAll.add(new MessageQueue(topic, parts[0], Integer.parseInt(parts[1])));
        }
        Collections.sort(mqAll);
        List<String> cidAll = new ArrayList<>();
        for (Member m : members) {
            cidAll.add(m.consumer.buildMQClientId());
        }
        Collections.sort(cidAll);
        AllocateMessageQueueAveragely strategy = new AllocateMessageQueueAveragely();
        for (int i = 0; i < members.size(); i++) {
            List<String> expected = new ArrayList<>();
            for (MessageQueue mq : strategy.allocate(group, members.get(i).consumer.buildMQClientId(), mqAll, cidAll)) {
                expected.add(mq.getTopic() + "/" + mq.getBrokerName() + "/" + mq.getQueueId());
            }
            Collections.sort(expected);
            if (!expected.equals(assigned.get(i))) {
                return false;
            }
        }
        return true;
    }
}
