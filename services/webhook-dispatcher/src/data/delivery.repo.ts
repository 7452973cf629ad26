import type { Connection } from '@platform/mongo';
import { deliveryModel, type DeliveryAttempt, type DeliveryDoc } from './delivery.model';

export type DeliveryRepo = ReturnType<typeof deliveryRepo>;

export function deliveryRepo(db: Connection) {
  const Model = deliveryModel(db);
  return {
    model: Model,
    async find(id: string): Promise<DeliveryDoc | null> {
      return Model.findById(id).lean<DeliveryDoc>();
    },
    /** Records one attempt (upserting the delivery) and its resulting status. */
    async recordAttempt(key: Omit<DeliveryDoc, 'attempts' | 'status' | 'createdAt' | 'updatedAt'>, attempt: DeliveryAttempt, status: DeliveryDoc['status']) {
      const now = new Date();
      await Model.updateOne(
        { _id: key._id },
        {
          $setOnInsert: { tenantId: key.tenantId, projectId: key.projectId, destinationId: key.destinationId, eventId: key.eventId, eventType: key.eventType, createdAt: now },
          $set: { status, updatedAt: now },
          $push: { attempts: attempt },
        },
        { upsert: true },
      );
    },
  };
}
