/*
 * Golden vectors of the message-request-mode / server-side assignment bodies from the official
 * Apache RocketMQ 5.3.3 classes (rocketmq-remoting, rocketmq-common, rocketmq-broker; fastjson 1.2.83):
 * SetMessageRequestModeRequestBody (SET_MESSAGE_REQUEST_MODE 401), QueryAssignmentRequestBody /
 * QueryAssignmentResponseBody (QUERY_ASSIGNMENT 400) and MessageRequestModeManager.encode()
 * (GET_ALL_MESSAGE_REQUEST_MODE 402 body, messageRequestMode.json). Every input is fixed, so the
 * output is reproducible. Writes one <name>.hex file per vector into the directory given as the
 * first argument (the 4.9.8 jars have none of these classes); read by
 * tests/unit/protocol/test_protocol_assignment_bodies.py. Capture command (repository root; the
 * 5.3.3 jars cached in ~/.m2 by the interop suite, rocketmq-broker for MessageRequestModeManager):
 *
 *   mvn -B -q -o -f tests/interop/java/pom.xml -Drocketmq.version=5.3.3 dependency:build-classpath -Dmdep.outputFile=/tmp/rmq-cp.txt
 *   B=~/.m2/repository/org/apache/rocketmq/rocketmq-broker/5.3.3/rocketmq-broker-5.3.3.jar
 *   mkdir -p /tmp/capture-assign && javac -d /tmp/capture-assign -cp "$B:$(cat /tmp/rmq-cp.txt)" tests/interop/vectors/CaptureAssignmentVectors.java
 *   java -Dcapture.date=$(date -u +%F) -cp "/tmp/capture-assign:$B:$(cat /tmp/rmq-cp.txt)" CaptureAssignmentVectors tests/vectors/java_assignment
 *
 * Captured on 2026-11-22 with OpenJDK 17.0.15.
 */
import java.io.File;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.*;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.rocketmq.broker.loadbalance.MessageRequestModeManager;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.message.MessageQueueAssignment;
import org.apache.rocketmq.common.message.MessageRequestMode;
import org.apache.rocketmq.remoting.protocol.body.QueryAssignmentRequestBody;
import org.apache.rocketmq.remoting.protocol.body.QueryAssignmentResponseBody;
import org.apache.rocketmq.remoting.protocol.body.SetMessageRequestModeRequestBody;
import org.apache.rocketmq.remoting.protocol.heartbeat.MessageModel;

public class CaptureAssignmentVectors {
    static final String DATE = System.getProperty("capture.date", "unknown");
    static File outDir;

    static void write(String name, String method, String note, String json) throws Exception {
        byte[] data = json.getBytes(StandardCharsets.UTF_8);
        try (PrintWriter w = new PrintWriter(new File(outDir, name + ".hex"), "UTF-8")) {
            w.println("# provenance: apache/rocketmq 5.3.3 " + method
                + ", captured by tests/interop/vectors/CaptureAssignmentVectors.java on " + DATE);
            for (String line : note.split("\n")) w.println("# " + line);
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < data.length; i++) {
                sb.append(String.format("%02x", data[i] & 0xff));
                if (i % 32 == 31 || i == data.length - 1) { w.println(sb); sb.setLength(0); }
            }
        }
        System.out.println(name + " " + json);
    }

    static SetMessageRequestModeRequestBody mode(String topic, String group, MessageRequestMode m, int share) {
        SetMessageRequestModeRequestBody b = new SetMessageRequestModeRequestBody();
        b.setTopic(topic);
        b.setConsumerGroup(group);
        b.setMode(m);
        b.setPopShareQueueNum(share);
        return b;
    }

    static MessageQueueAssignment assignment(MessageQueue mq, MessageRequestMode m, Map<String, String> attachments) {
        MessageQueueAssignment a = new MessageQueueAssignment();
        a.setMessageQueue(mq);
        a.setMode(m);
        a.setAttachments(attachments);
        return a;
    }

    public static void main(String[] args) throws Exception {
        outDir = new File(args[0]);
        outDir.mkdirs();

        write("set_mode_pop", "SetMessageRequestModeRequestBody.encode()",
            "topic TopicA, consumerGroup GroupA, mode POP, popShareQueueNum 2",
            new String(mode("TopicA", "GroupA", MessageRequestMode.POP, 2).encode(), StandardCharsets.UTF_8));
        SetMessageRequestModeRequestBody dflt = new SetMessageRequestModeRequestBody();
        dflt.setTopic("TopicA");
        dflt.setConsumerGroup("GroupA");
        write("set_mode_default", "SetMessageRequestModeRequestBody.encode()",
            "topic TopicA, consumerGroup GroupA, mode and popShareQueueNum left at their defaults",
            new String(dflt.encode(), StandardCharsets.UTF_8));

        QueryAssignmentRequestBody q = new QueryAssignmentRequestBody();
        q.setTopic("TopicA");
        q.setConsumerGroup("GroupA");
        q.setClientId("127.0.0.1@interop");
        q.setStrategyName("AVG");
        q.setMessageModel(MessageModel.CLUSTERING);
        write("query_assignment_request", "QueryAssignmentRequestBody.encode()",
            "topic TopicA, consumerGroup GroupA, clientId 127.0.0.1@interop, strategyName AVG, messageModel CLUSTERING",
            new String(q.encode(), StandardCharsets.UTF_8));

        QueryAssignmentResponseBody one = new QueryAssignmentResponseBody();
        one.setMessageQueueAssignments(new HashSet<>(Collections.singletonList(
            assignment(new MessageQueue("TopicA", "broker-a", -1), MessageRequestMode.POP, null))));
        write("query_assignment_response_pop", "QueryAssignmentResponseBody.encode()",
            "one assignment: MessageQueue(TopicA, broker-a, -1), mode POP, attachments null",
            new String(one.encode(), StandardCharsets.UTF_8));

        Map<String, String> att = new HashMap<>();
        att.put("k", "v");
        QueryAssignmentResponseBody withAtt = new QueryAssignmentResponseBody();
        withAtt.setMessageQueueAssignments(new HashSet<>(Collections.singletonList(
            assignment(new MessageQueue("TopicA", "broker-a", 3), MessageRequestMode.PULL, att))));
        write("query_assignment_response_attachments", "QueryAssignmentResponseBody.encode()",
            "one assignment: MessageQueue(TopicA, broker-a, 3), mode PULL, attachments {k=v}",
            new String(withAtt.encode(), StandardCharsets.UTF_8));

        QueryAssignmentResponseBody three = new QueryAssignmentResponseBody();
        Set<MessageQueueAssignment> s = new HashSet<>();
        for (int i = 0; i < 3; i++) {
            s.add(assignment(new MessageQueue("TopicA", "broker-a", i), MessageRequestMode.PULL, null));
        }
        three.setMessageQueueAssignments(s);
        write("query_assignment_response_three", "QueryAssignmentResponseBody.encode()",
            "three assignments: MessageQueue(TopicA, broker-a, 0..2), mode PULL (HashSet order as Java emitted it)",
            new String(three.encode(), StandardCharsets.UTF_8));

        write("query_assignment_response_null", "QueryAssignmentResponseBody.encode()",
            "messageQueueAssignments null (no assignment: unknown topic, strategy or group)",
            new String(new QueryAssignmentResponseBody().encode(), StandardCharsets.UTF_8));
        QueryAssignmentResponseBody empty = new QueryAssignmentResponseBody();
        empty.setMessageQueueAssignments(new HashSet<>());
        write("query_assignment_response_empty", "QueryAssignmentResponseBody.encode()",
            "messageQueueAssignments empty (the client is not in the group)",
            new String(empty.encode(), StandardCharsets.UTF_8));

        MessageRequestModeManager m = new MessageRequestModeManager();
        m.setMessageRequestMode("TopicA", "GroupA", mode("TopicA", "GroupA", MessageRequestMode.POP, 0));
        write("request_mode_manager", "MessageRequestModeManager.encode()",
            "one entry: TopicA / GroupA -> mode POP, popShareQueueNum 0 (GET_ALL_MESSAGE_REQUEST_MODE body)",
            m.encode());
        write("request_mode_manager_pretty", "MessageRequestModeManager.encode(true)",
            "the same table in the pretty form ConfigManager.persist() writes to config/messageRequestMode.json",
            m.encode(true));
    }
}
